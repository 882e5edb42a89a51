"""How the SDK retries: resubscribing an event stream, and reads that met UNAVAILABLE."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReconnectPolicy:
    """How an :class:`EventStream` retries after its connection fails.

    The first retry waits ``initial_delay`` seconds, each further one twice as long, up to
    ``max_delay``. After ``max_attempts`` consecutive failures the error is raised; any
    message received (event or heartbeat) resets the count. The default is about half a
    minute of retries: enough for a server restart, short enough that a server gone for
    good is reported.
    """

    initial_delay: float = 0.1
    max_delay: float = 5.0
    max_attempts: int = 10

    @classmethod
    def never(cls) -> ReconnectPolicy:
        """The first connection failure ends the stream with :class:`OdysseyError`."""
        return cls(max_attempts=0)

    def delay(self, attempt: int) -> float:
        """The wait before retry number ``attempt`` (1-based)."""
        return min(self.initial_delay * 2.0 ** min(attempt - 1, 62), self.max_delay)


#: Reads (Get*, List*, Inspect*, server info, exports) retried after UNAVAILABLE: a few
#: quick attempts, about 1.5 s in all. Submit, Run and other writes are never retried.
READ_RETRY = ReconnectPolicy(initial_delay=0.1, max_delay=1.0, max_attempts=4)

import { Code, type Client } from "@connectrpc/connect";

import type { SessionEvent } from "./gen/odyssey/v1/events_pb.js";
import type {
  Heartbeat,
  SessionService,
  SubscribeSessionResponse,
} from "./gen/odyssey/v1/session_pb.js";
import { OdysseyError } from "./errors.js";

/**
 * How an {@link EventStream} resubscribes after its connection fails (UNAVAILABLE: a
 * network failure, a server restarting). The first retry waits `initialDelayMs`, each
 * further one twice as long, up to `maxDelayMs`; after `maxAttempts` consecutive failures
 * the error is thrown. Any message received (event or heartbeat) resets the count.
 */
export interface ReconnectPolicy {
  initialDelayMs: number;
  maxDelayMs: number;
  maxAttempts: number;
}

/**
 * About half a minute of retries: enough for a server restart, short enough that a server
 * gone for good is reported.
 */
export const DEFAULT_RECONNECT: Readonly<ReconnectPolicy> = Object.freeze({
  initialDelayMs: 100,
  maxDelayMs: 5_000,
  maxAttempts: 10,
});

/** The first connection failure ends the stream with an {@link OdysseyError}. */
export const NO_RECONNECT: Readonly<ReconnectPolicy> = Object.freeze({
  ...DEFAULT_RECONNECT,
  maxAttempts: 0,
});

/** The wait before retry number `attempt` (1-based), in milliseconds. */
export function reconnectDelayMs(policy: ReconnectPolicy, attempt: number): number {
  return Math.min(policy.initialDelayMs * 2 ** Math.min(attempt - 1, 52), policy.maxDelayMs);
}

/**
 * A session's events after a sequence number, replayed then live, in sequence order, each
 * once. When the connection drops, the stream resubscribes by itself after `lastSequence`,
 * as its {@link ReconnectPolicy} allows, so the loop sees every event once. `reconnects`
 * counts resubscriptions: each new subscription the server answered after a dropped
 * connection, once, however many attempts failed before it. Heartbeats only prove the
 * stream is alive: they are counted (the latest is `lastHeartbeat`), never yielded.
 *
 * `lastSequence` is the sequence of the last event yielded: after `close()` or an error,
 * `client.events(sessionId, { afterSequence: stream.lastSequence })` resumes with nothing
 * missed and nothing repeated. Iterate it once. Iteration ends when the server ends the
 * stream or `close()` is called; a refusal (NOT_FOUND for an unknown or deleted session)
 * or a connection that stays down past the policy throws an {@link OdysseyError}.
 */
export class EventStream implements AsyncIterable<SessionEvent> {
  readonly sessionId: string;
  lastSequence: bigint;
  heartbeats = 0;
  lastHeartbeat?: Heartbeat;
  /** Resubscriptions the server answered after a dropped connection (attempts that failed do not count). */
  reconnects = 0;
  /** When set, the events it rejects are skipped (`lastSequence` still moves past them). */
  keep?: (event: SessionEvent) => boolean;
  /** When set, the stream ends after the first event it accepts. */
  stopWhen?: (event: SessionEvent) => boolean;
  private readonly abort = new AbortController();
  private responses: AsyncIterable<SubscribeSessionResponse>;
  /**
   * Whether the server answered the first subscribe: a failure before that (no server, a
   * refusal) is reported, never retried.
   */
  private answered = false;

  constructor(
    private readonly sessions: Client<typeof SessionService>,
    sessionId: string,
    afterSequence: bigint,
    private readonly headers: Record<string, string>,
    private readonly reconnect: ReconnectPolicy = DEFAULT_RECONNECT,
  ) {
    this.sessionId = sessionId;
    this.lastSequence = afterSequence;
    this.responses = this.subscribe(false);
  }

  /** `again`: a resubscription, counted in `reconnects` once the server answers it. */
  private subscribe(again: boolean): AsyncIterable<SubscribeSessionResponse> {
    return this.sessions.subscribeSession(
      { sessionId: this.sessionId, afterSequence: this.lastSequence },
      {
        signal: this.abort.signal,
        headers: this.headers,
        // A refusal comes as a trailers-only answer, whose headers carry the status.
        onHeader: (headers) => {
          const answered = !headers.has("grpc-status");
          this.answered ||= answered;
          if (again && answered) {
            this.reconnects += 1;
          }
        },
      },
    );
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SessionEvent> {
    let attempts = 0;
    try {
      for (;;) {
        try {
          for await (const response of this.responses) {
            attempts = 0;
            this.answered = true;
            if (response.item.case === "heartbeat") {
              this.heartbeats += 1;
              this.lastHeartbeat = response.item.value;
              continue;
            }
            if (response.item.case !== "event") {
              continue;
            }
            const event = response.item.value;
            // Already yielded before a resubscribe (or the caller resumed from an older
            // sequence than it has seen): skipped, never repeated.
            if (event.sequence <= this.lastSequence) {
              continue;
            }
            this.lastSequence = event.sequence;
            if (this.keep !== undefined && !this.keep(event)) {
              continue;
            }
            const last = this.stopWhen?.(event) ?? false;
            yield event;
            if (last) {
              return;
            }
          }
          return;
        } catch (error) {
          if (this.abort.signal.aborted) {
            return;
          }
          const failure = OdysseyError.from(error);
          const retry =
            this.answered &&
            failure instanceof OdysseyError &&
            failure.code === Code.Unavailable &&
            attempts < this.reconnect.maxAttempts;
          if (!retry) {
            throw failure;
          }
          attempts += 1;
          await sleep(reconnectDelayMs(this.reconnect, attempts), this.abort.signal);
          if (this.abort.signal.aborted) {
            return;
          }
          this.responses = this.subscribe(true);
        }
      }
    } finally {
      this.abort.abort();
    }
  }

  /** Ends the subscription; the server sees the client go away. */
  close(): void {
    this.abort.abort();
  }
}

/** Waits `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

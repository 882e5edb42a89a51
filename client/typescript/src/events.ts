import { Code, type Client } from "@connectrpc/connect";

import type { SessionEvent } from "./gen/odyssey/v1/events_pb.js";
import type { SessionService, SubscribeSessionResponse } from "./gen/odyssey/v1/session_pb.js";
import { OdysseyError } from "./errors.js";

/**
 * A session's events after a sequence number, replayed then live, in sequence order, each
 * once. Heartbeats only prove the stream is alive: they are counted, never yielded.
 *
 * `lastSequence` is the sequence of the last event yielded: after a disconnect,
 * `client.events(sessionId, { afterSequence: stream.lastSequence })` resumes with nothing
 * missed and nothing repeated. Iterate it once. Iteration ends when the server ends the
 * stream or `close()` is called; a refusal (NOT_FOUND for an unknown or deleted session,
 * UNAVAILABLE when the server goes away) throws an {@link OdysseyError}.
 */
export class EventStream implements AsyncIterable<SessionEvent> {
  readonly sessionId: string;
  lastSequence: bigint;
  heartbeats = 0;
  /** When set, the stream ends after the first event it accepts. */
  stopWhen?: (event: SessionEvent) => boolean;
  private readonly abort = new AbortController();
  private readonly responses: AsyncIterable<SubscribeSessionResponse>;

  constructor(
    sessions: Client<typeof SessionService>,
    sessionId: string,
    afterSequence: bigint,
    headers: Record<string, string>,
  ) {
    this.sessionId = sessionId;
    this.lastSequence = afterSequence;
    this.responses = sessions.subscribeSession(
      { sessionId, afterSequence },
      { signal: this.abort.signal, headers },
    );
  }

  async *[Symbol.asyncIterator](): AsyncIterator<SessionEvent> {
    try {
      for await (const response of this.responses) {
        if (response.item.case === "heartbeat") {
          this.heartbeats += 1;
          continue;
        }
        if (response.item.case !== "event") {
          continue;
        }
        const event = response.item.value;
        // Replay and live delivery never overlap on the server; this guard keeps the
        // promise even if a caller resumes from an older sequence than it has seen.
        if (event.sequence <= this.lastSequence) {
          continue;
        }
        this.lastSequence = event.sequence;
        const last = this.stopWhen?.(event) ?? false;
        yield event;
        if (last) {
          return;
        }
      }
    } catch (error) {
      const closed = this.abort.signal.aborted;
      if (closed && (error as { code?: unknown }).code === Code.Canceled) {
        return;
      }
      throw OdysseyError.from(error);
    } finally {
      this.abort.abort();
    }
  }

  /** Ends the subscription; the server sees the client go away. */
  close(): void {
    this.abort.abort();
  }
}

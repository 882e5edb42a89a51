import { Code, type Client } from "@connectrpc/connect";

import type {
  Approval,
  ApprovalService,
  WatchApprovalsResponse,
} from "./gen/odyssey/v1/approval_pb.js";
import { OdysseyError } from "./errors.js";
import { DEFAULT_RECONNECT, reconnectDelayMs, type ReconnectPolicy } from "./events.js";

/** One change to the pending approval requests: a snapshot, an added or a removed one. */
export type ApprovalChange = Exclude<WatchApprovalsResponse["item"], { case: "heartbeat" | undefined }>;

/**
 * The pending approval requests of one session (or of all), kept current
 * (`WatchApprovals`). The first change yielded is a `snapshot` of every pending request;
 * then each request filed (`added`) and each that ends (`removed`, an `ApprovalResolved`:
 * decided by this or any other client, timed out, cancelled). `pending` holds the requests
 * pending after the changes yielded so far, oldest first. When the connection drops, the
 * watch is opened again as its {@link ReconnectPolicy} allows, and its first change is a
 * fresh snapshot that replaces `pending`. Heartbeats are counted, never yielded. Iterate
 * it once; `close()` ends it.
 */
export class ApprovalWatch implements AsyncIterable<ApprovalChange> {
  readonly sessionId: string;
  pending: Approval[] = [];
  heartbeats = 0;
  /** Watches the server answered after a dropped connection. */
  reconnects = 0;
  private readonly abort = new AbortController();
  private responses: AsyncIterable<WatchApprovalsResponse>;
  private answered = false;

  constructor(
    private readonly approvals: Client<typeof ApprovalService>,
    sessionId: string,
    private readonly headers: Record<string, string>,
    private readonly reconnect: ReconnectPolicy = DEFAULT_RECONNECT,
  ) {
    this.sessionId = sessionId;
    this.responses = this.watch(false);
  }

  private watch(again: boolean): AsyncIterable<WatchApprovalsResponse> {
    return this.approvals.watchApprovals(
      { sessionId: this.sessionId },
      {
        signal: this.abort.signal,
        headers: this.headers,
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

  /** Applies a received item to `pending`; the change to yield, if any. */
  private apply(response: WatchApprovalsResponse): ApprovalChange | undefined {
    const item = response.item;
    switch (item.case) {
      case "snapshot":
        this.pending = [...item.value.approvals];
        return item;
      case "added":
        this.pending = this.pending.filter((a) => a.requestId !== item.value.requestId);
        this.pending.push(item.value);
        return item;
      case "removed":
        this.pending = this.pending.filter((a) => a.requestId !== item.value.requestId);
        return item;
      case "heartbeat":
        this.heartbeats += 1;
        return undefined;
      default:
        return undefined;
    }
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ApprovalChange> {
    let attempts = 0;
    try {
      for (;;) {
        try {
          for await (const response of this.responses) {
            attempts = 0;
            this.answered = true;
            const change = this.apply(response);
            if (change !== undefined) {
              yield change;
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
          await new Promise((resolve) =>
            setTimeout(resolve, reconnectDelayMs(this.reconnect, attempts)),
          );
          if (this.abort.signal.aborted) {
            return;
          }
          this.responses = this.watch(true);
        }
      }
    } finally {
      this.abort.abort();
    }
  }

  /** Ends the watch; the server sees the client go away. */
  close(): void {
    this.abort.abort();
  }
}

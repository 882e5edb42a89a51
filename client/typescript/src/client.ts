import { create } from "@bufbuild/protobuf";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import { packProject } from "./archive.js";
import { call, OdysseyError, Code } from "./errors.js";
import { EventStream, type ReconnectPolicy } from "./events.js";
import {
  ApprovalService,
  type Approval,
  type ResolveApprovalResponse,
} from "./gen/odyssey/v1/approval_pb.js";
import {
  BuildBundleRequestSchema,
  BundleService,
  type Bundle,
  type BuildBundleRequest,
} from "./gen/odyssey/v1/bundle_pb.js";
import { ApprovalDecision } from "./gen/odyssey/v1/events_pb.js";
import { ExecutionService, type ExecutionStatus } from "./gen/odyssey/v1/execution_pb.js";
import { ServerService, type GetServerInfoResponse } from "./gen/odyssey/v1/server_pb.js";
import { SessionService, type Session } from "./gen/odyssey/v1/session_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "./gen/grpc/health/v1/health_pb.js";

/** Archive bytes per BuildBundle message: well under the server's message limit. */
const CHUNK_BYTES = 256 * 1024;
/**
 * The largest message accepted from the server. The server caps what it sends (4 MiB by
 * default, configurable), so this only has to be at least as large.
 */
const READ_MAX_BYTES = 64 * 1024 * 1024;
/**
 * Keepalive pings find a dead connection under a long-lived event stream, which would
 * otherwise wait forever on a peer that vanished without closing it.
 */
const PING_INTERVAL_MS = 30_000;
const PING_TIMEOUT_MS = 20_000;

export interface ConnectOptions {
  /** `host:port` of the server. */
  address: string;
  /** Sent as `authorization: Bearer <token>` on every call. */
  token?: string;
  /**
   * TLS: `true` checks the server against the system's roots; `{ ca }` against the given
   * PEM certificates. Plaintext when absent or `false`.
   */
  tls?: boolean | { ca: string | Buffer };
}

/** A connection to an odysseyd server, over gRPC (HTTP/2) via Connect. */
export class OdysseyClient {
  readonly bundles: Client<typeof BundleService>;
  readonly sessions: Client<typeof SessionService>;
  readonly executions: Client<typeof ExecutionService>;
  readonly approvals: Client<typeof ApprovalService>;
  readonly server: Client<typeof ServerService>;
  /** The call headers (the bearer token), for calls made on the raw clients. */
  readonly headers: Record<string, string>;
  private readonly health_: Client<typeof Health>;

  constructor(readonly transport: Transport, token?: string) {
    this.headers = token ? { authorization: `Bearer ${token}` } : {};
    this.bundles = createClient(BundleService, transport);
    this.sessions = createClient(SessionService, transport);
    this.executions = createClient(ExecutionService, transport);
    this.approvals = createClient(ApprovalService, transport);
    this.server = createClient(ServerService, transport);
    this.health_ = createClient(Health, transport);
  }

  /** Prepares a client; it connects on the first call. */
  static connect(options: ConnectOptions): OdysseyClient {
    const tls = options.tls ?? false;
    const transport = createGrpcTransport({
      baseUrl: `${tls ? "https" : "http"}://${options.address}`,
      nodeOptions: typeof tls === "object" ? { ca: tls.ca } : {},
      readMaxBytes: READ_MAX_BYTES,
      pingIntervalMs: PING_INTERVAL_MS,
      pingTimeoutMs: PING_TIMEOUT_MS,
    });
    return new OdysseyClient(transport, options.token);
  }

  // Server

  /** The serving status of the server (or of one service): `"SERVING"`, `"NOT_SERVING"`. */
  async health(service = ""): Promise<string> {
    const response = await call(() => this.health_.check({ service }));
    return HealthCheckResponse_ServingStatus[response.status];
  }

  /** Waits until the server answers health checks with SERVING. */
  async waitUntilServing(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let failure: unknown;
      try {
        if ((await this.health()) === "SERVING") {
          return;
        }
      } catch (error) {
        failure = error;
      }
      if (Date.now() >= deadline) {
        throw failure ?? new OdysseyError(Code.DeadlineExceeded, "server not serving");
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async serverInfo(): Promise<GetServerInfoResponse> {
    return call(() => this.server.getServerInfo({}, { headers: this.headers }));
  }

  // Bundles

  /** Packs a bundle project folder, uploads it, and returns the installed bundle. */
  async installBundle(
    folder: string,
    options: { namespace?: string; force?: boolean } = {},
  ): Promise<Bundle> {
    const archive = await packProject(folder);
    async function* messages(): AsyncIterable<BuildBundleRequest> {
      yield create(BuildBundleRequestSchema, {
        item: {
          case: "options",
          value: { namespace: options.namespace ?? "", force: options.force ?? false },
        },
      });
      for (let start = 0; start < archive.length; start += CHUNK_BYTES) {
        yield create(BuildBundleRequestSchema, {
          item: { case: "chunk", value: archive.subarray(start, start + CHUNK_BYTES) },
        });
      }
    }
    const response = await call(() =>
      this.bundles.buildBundle(messages(), { headers: this.headers }),
    );
    return required(response.bundle, "bundle");
  }

  // Sessions

  /** Opens a session on an installed bundle (`name`, `name@version`, `@sha256:<hex>`, ...). */
  async createSession(
    bundleReference: string,
    options: { agentId?: string; metadata?: Record<string, string> } = {},
  ): Promise<Session> {
    const response = await call(() =>
      this.sessions.createSession(
        { bundleReference, agentId: options.agentId ?? "", metadata: options.metadata ?? {} },
        { headers: this.headers },
      ),
    );
    return required(response.session, "session");
  }

  async getSession(sessionId: string): Promise<Session> {
    const response = await call(() =>
      this.sessions.getSession({ sessionId }, { headers: this.headers }),
    );
    return required(response.session, "session");
  }

  async deleteSession(sessionId: string): Promise<void> {
    await call(() => this.sessions.deleteSession({ sessionId }, { headers: this.headers }));
  }

  /**
   * The session's events after `afterSequence` (0: from the start), then live ones. The
   * stream resubscribes by itself after a dropped connection, as `reconnect` allows
   * (`NO_RECONNECT`: not at all).
   */
  events(
    sessionId: string,
    options: { afterSequence?: bigint; reconnect?: ReconnectPolicy } = {},
  ): EventStream {
    return new EventStream(
      this.sessions,
      sessionId,
      options.afterSequence ?? 0n,
      this.headers,
      options.reconnect,
    );
  }

  // Turns

  /** Queues a turn and returns its execution id at once. */
  async submit(sessionId: string, prompt: string): Promise<string> {
    const response = await call(() =>
      this.executions.submit({ input: { sessionId, prompt } }, { headers: this.headers }),
    );
    return response.executionId;
  }

  /** Runs a turn and waits for it to end (a turn that needs an approval waits for it). */
  async run(sessionId: string, prompt: string): Promise<ExecutionStatus> {
    const response = await call(() =>
      this.executions.run({ input: { sessionId, prompt } }, { headers: this.headers }),
    );
    return required(response.status, "status");
  }

  /**
   * Starts a turn and streams its events as they happen, ending with its `turnCompleted`
   * event. Only this turn's events: those of another turn of the session (one queued
   * before it, say) are left out. The stream starts after the session's last event, so
   * nothing is missed, and
   * resubscribes by itself after a dropped connection, as `reconnect` allows.
   */
  async streamTurn(
    sessionId: string,
    prompt: string,
    options: { reconnect?: ReconnectPolicy } = {},
  ): Promise<TurnStream> {
    const { lastSequence } = await this.getSession(sessionId);
    const events = this.events(sessionId, { afterSequence: lastSequence, ...options });
    let executionId: string;
    try {
      executionId = await this.submit(sessionId, prompt);
    } catch (error) {
      events.close();
      throw error;
    }
    events.keep = (event) => event.turnId === executionId;
    events.stopWhen = (event) =>
      event.turnId === executionId && event.payload.case === "turnCompleted";
    return Object.assign(events, { executionId });
  }

  async executionStatus(executionId: string): Promise<ExecutionStatus> {
    const response = await call(() =>
      this.executions.getExecutionStatus({ executionId }, { headers: this.headers }),
    );
    return required(response.status, "status");
  }

  async cancel(executionId: string): Promise<ExecutionStatus> {
    const response = await call(() =>
      this.executions.cancelExecution({ executionId }, { headers: this.headers }),
    );
    return required(response.status, "status");
  }

  // Approvals

  /** Pending approval requests, oldest first, of one session (or all). */
  async listApprovals(sessionId = ""): Promise<Approval[]> {
    const approvals: Approval[] = [];
    let pageToken = "";
    do {
      const page = await call(() =>
        this.approvals.listApprovals({ sessionId, pageToken }, { headers: this.headers }),
      );
      approvals.push(...page.approvals);
      pageToken = page.nextPageToken;
    } while (pageToken);
    return approvals;
  }

  async resolveApproval(
    requestId: string,
    decision: ApprovalDecision,
    reason = "",
  ): Promise<ResolveApprovalResponse> {
    return call(() =>
      this.approvals.resolveApproval({ requestId, decision, reason }, { headers: this.headers }),
    );
  }

  /** Lets the waiting tool call run (`always`: and matching calls of the session). */
  async approve(requestId: string, options: { always?: boolean } = {}): Promise<void> {
    const decision = options.always
      ? ApprovalDecision.ALLOW_ALWAYS
      : ApprovalDecision.ALLOW_ONCE;
    await this.resolveApproval(requestId, decision);
  }

  /** Refuses the waiting tool call; `reason` is shown to the model. */
  async deny(requestId: string, reason = ""): Promise<void> {
    await this.resolveApproval(requestId, ApprovalDecision.DENY, reason);
  }
}

/**
 * The live events of one turn, ending with its `turnCompleted` event; the events of the
 * session's other turns are left out.
 */
export type TurnStream = EventStream & { readonly executionId: string };

function required<T>(value: T | undefined, field: string): T {
  if (value === undefined) {
    throw new OdysseyError(Code.Internal, `the server's answer has no ${field}`);
  }
  return value;
}

import { create, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import {
  createClient,
  type CallOptions as ConnectCallOptions,
  type Client,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";

import { call, OdysseyError, Code } from "./errors.js";
import { EventStream, reconnectDelayMs, type ReconnectPolicy } from "./events.js";
import { ApprovalWatch } from "./watch.js";
import {
  ApprovalService,
  type Approval,
  type ResolveApprovalResponse,
} from "./gen/odyssey/v1/approval_pb.js";
import {
  BuildBundleRequestSchema,
  BundleService,
  ImportBundleRequestSchema,
  type AgentInfo,
  type Bundle,
  type BuildBundleRequest,
  type ImportBundleRequest,
  type InspectBundleResponse,
  type ModelInfo,
  type PullBundleResponse,
  type PushBundleResponse,
  type SkillInfo,
} from "./gen/odyssey/v1/bundle_pb.js";
import {
  ApprovalPolicy,
  SandboxMode,
  type InputMode,
  type ModelSpecSchema,
} from "./gen/odyssey/v1/common_pb.js";
import { ApprovalDecision, HumanInputAction } from "./gen/odyssey/v1/events_pb.js";
import {
  ExecutionService,
  type ExecutionStatus,
  type RunSessionCommandResponse,
  type SendInputResponse,
  type StreamSessionCommandResponse,
  type TurnInputSchema,
} from "./gen/odyssey/v1/execution_pb.js";
import { ServerService, type GetServerInfoResponse } from "./gen/odyssey/v1/server_pb.js";
import {
  ListSessionToolsResponseSchema,
  SessionService,
  type GetTurnChangesResponse,
  type ListSessionToolsResponse,
  type RewindSessionResponse,
  type Session,
} from "./gen/odyssey/v1/session_pb.js";
import { Health, HealthCheckResponse_ServingStatus } from "./gen/grpc/health/v1/health_pb.js";

/** Archive bytes per BuildBundle message: well under the server's message limit. */
const CHUNK_BYTES = 256 * 1024;
/**
 * The largest message accepted from the server. The server caps what it sends (4 MiB by
 * default, configurable), so this only has to be at least as large.
 */
export const READ_MAX_BYTES = 64 * 1024 * 1024;


/**
 * Per-call options, the last argument of every call: `signal` cancels the call (it
 * fails with CANCELLED), `timeoutMs` is its deadline (DEADLINE_EXCEEDED when it passes).
 */
export interface CallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/**
 * Reads (gets, lists, inspections, exports, server info) retried after UNAVAILABLE: a few
 * quick attempts, about 1.5 s in all. Writes are never retried.
 */
export const READ_RETRY: Readonly<ReconnectPolicy> = Object.freeze({
  initialDelayMs: 100,
  maxDelayMs: 1_000,
  maxAttempts: 4,
});

/** Attempts of a submit refused for a full queue, and the longest pause taken. */
const SUBMIT_ATTEMPTS = 3;
const LONGEST_RETRY_DELAY_MS = 10_000;

/** A model: a `ModelSpec` (its fields), or `"provider/name"`. */
export type Model = MessageInitShape<typeof ModelSpecSchema> | string;

/** Options of `createSession`. */
export interface SessionOptions extends CallOptions {
  /** The agent to talk to; the bundle's default agent when absent. */
  agentId?: string;
  /** Replaces the agent's model for this session. */
  model?: Model;
  /** No more permissive than the operator allows; the manifest's when absent. */
  sandboxMode?: SandboxMode;
  /** Whether tool calls wait for a person (`ON_REQUEST`, `UNTRUSTED`, `NEVER`). */
  approvalPolicy?: ApprovalPolicy;
  metadata?: Record<string, string>;
  /** Tokens (input + output) the session may spend; the server's default when absent. */
  tokenBudget?: bigint;
}

/** Options of `submit`, `run` and `streamTurn`: per-turn overrides and metadata. */
export interface TurnOptions extends CallOptions {
  /** Working directory, relative to the session workspace. */
  cwd?: string;
  /** Replaces the session's model for this turn. */
  model?: Model;
  metadata?: Record<string, string>;
}

/** A command to run in a session's sandbox. */
export interface Command {
  /** The program and its arguments, or a command line split with shell quoting rules (no shell runs it). */
  argv: string[] | string;
  /** Working directory, relative to the session workspace. */
  cwd?: string;
  /** The command's own time limit (the server's default when absent). */
  commandTimeoutMs?: number;
}

/** An installed bundle as `exportBundle` sends it: its identity and its archive. */
export interface ExportedBundle {
  bundle?: Bundle;
  archive: Uint8Array;
}

/**
 * The items of every page of a List call, fetched as the loop asks for them:
 * `for await (const item of client.listSessions())`, or `await pager.all()`.
 */
export class Pager<T> implements AsyncIterable<T> {
  constructor(
    private readonly page: (token: string) => Promise<{ items: T[]; next: string }>,
  ) {}

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let token = "";
    do {
      const { items, next } = await this.page(token);
      yield* items;
      token = next;
    } while (token);
  }

  /** Every item of every page. */
  async all(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) {
      items.push(item);
    }
    return items;
  }
}

/** Adds the bearer token to every call that carries none, the raw clients' included. */
/** The chunks of a streamed archive, joined (no `Buffer`: the browser entry shares this). */
function concatBytes(chunks: Uint8Array[]): Uint8Array {
  const joined = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    joined.set(chunk, at);
    at += chunk.length;
  }
  return joined;
}

export function tokenInterceptor(token: string): Interceptor {
  return (next) => (request) => {
    if (!request.header.has("authorization")) {
      request.header.set("authorization", `Bearer ${token}`);
    }
    return next(request);
  };
}

function modelSpec(model: Model | undefined): MessageInitShape<typeof ModelSpecSchema> | undefined {
  if (typeof model !== "string") {
    return model;
  }
  const slash = model.indexOf("/");
  if (slash <= 0 || slash === model.length - 1) {
    throw new OdysseyError(Code.InvalidArgument, `model ${model}: expected provider/name`);
  }
  return { provider: model.slice(0, slash), name: model.slice(slash + 1) };
}

function turnInput(
  sessionId: string,
  prompt: string,
  options: TurnOptions,
): MessageInitShape<typeof TurnInputSchema> {
  const model = modelSpec(options.model);
  return {
    sessionId,
    prompt,
    metadata: options.metadata ?? {},
    overrides: options.cwd || model ? { cwd: options.cwd ?? "", model } : undefined,
  };
}

function commandRequest(sessionId: string, command: Command) {
  const line = typeof command.argv === "string";
  return {
    sessionId,
    argv: line ? [] : (command.argv as string[]),
    commandLine: line ? (command.argv as string) : "",
    cwd: command.cwd ?? "",
    timeoutMs: BigInt(command.commandTimeoutMs ?? 0),
  };
}

/**
 * A connection to an odysseyd server over any Connect transport: every call of the API.
 * `OdysseyClient` (Node, gRPC over HTTP/2) and the browser entry's (gRPC-Web) add how
 * to connect.
 */
export class OdysseyClientCore {
  readonly bundles: Client<typeof BundleService>;
  readonly sessions: Client<typeof SessionService>;
  readonly executions: Client<typeof ExecutionService>;
  readonly approvals: Client<typeof ApprovalService>;
  readonly server: Client<typeof ServerService>;
  /** The call headers (the bearer token), for calls made on the raw clients. */
  readonly headers: Record<string, string>;
  private readonly health_: Client<typeof Health>;
  private readonly readRetry: ReconnectPolicy;

  constructor(
    readonly transport: Transport,
    token?: string,
    options: { readRetry?: ReconnectPolicy } = {},
  ) {
    this.readRetry = options.readRetry ?? READ_RETRY;
    this.headers = token ? { authorization: `Bearer ${token}` } : {};
    this.bundles = createClient(BundleService, transport);
    this.sessions = createClient(SessionService, transport);
    this.executions = createClient(ExecutionService, transport);
    this.approvals = createClient(ApprovalService, transport);
    this.server = createClient(ServerService, transport);
    this.health_ = createClient(Health, transport);
  }

  /** Ends the connection of a client made by `connect()`: open calls and streams end. */
  protected closeConnection: () => void = () => {};

  /**
   * Closes the client's connection: open calls and streams fail with CANCELLED (never
   * retried). Also `await using client = OdysseyClient.connect(...)`.
   */
  close(): void {
    this.closeConnection();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  /** Connect's call options for one call: the token, the caller's signal and deadline. */
  private opts(options: CallOptions = {}): ConnectCallOptions {
    return { headers: this.headers, signal: options.signal, timeoutMs: options.timeoutMs };
  }

  /** A read: UNAVAILABLE is retried with backoff as the client's read policy allows. */
  private async read<T>(rpc: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await call(rpc);
      } catch (error) {
        const retry =
          error instanceof OdysseyError &&
          error.code === Code.Unavailable &&
          attempt <= this.readRetry.maxAttempts &&
          !signal?.aborted;
        if (!retry) {
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, reconnectDelayMs(this.readRetry, attempt)));
      }
    }
  }

  /**
   * A Submit or Run: sent again after the server's delay while it refuses it for a full
   * queue (RESOURCE_EXHAUSTED with a RetryInfo: nothing happened), up to three attempts.
   * Writes are never retried otherwise.
   */
  private async submitting<T>(rpc: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await call(rpc);
      } catch (error) {
        const delayMs =
          error instanceof OdysseyError && error.code === Code.ResourceExhausted
            ? error.retryDelayMs
            : undefined;
        if (delayMs === undefined || attempt >= SUBMIT_ATTEMPTS || signal?.aborted) {
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(delayMs, LONGEST_RETRY_DELAY_MS)));
      }
    }
  }

  // Server

  /** The serving status of the server (or of one service): `"SERVING"`, `"NOT_SERVING"`. */
  async health(service = "", options: CallOptions = {}): Promise<string> {
    const response = await call(() =>
      this.health_.check({ service }, { signal: options.signal, timeoutMs: options.timeoutMs }),
    );
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

  async serverInfo(options?: CallOptions): Promise<GetServerInfoResponse> {
    return this.read(() => this.server.getServerInfo({}, this.opts(options)), options?.signal);
  }

  // Bundles

  /** A new bundle project (`hello` unless `name` is given), as a tar + gzip archive. */
  async initBundle(name = "", options?: CallOptions): Promise<Uint8Array> {
    const response = await this.read(
      () => this.bundles.initBundle({ name }, this.opts(options)),
      options?.signal,
    );
    return response.archive;
  }

  /** Builds and installs a bundle project sent as a tar + gzip archive. */
  async buildBundle(
    archive: Uint8Array,
    options: { namespace?: string; force?: boolean } & CallOptions = {},
  ): Promise<Bundle> {
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
    const response = await call(() => this.bundles.buildBundle(messages(), this.opts(options)));
    return required(response.bundle, "bundle");
  }

  /** An installed bundle with its agents, skills, tools, sandbox policy and README. */
  async inspectBundle(reference: string, options?: CallOptions): Promise<InspectBundleResponse> {
    return this.read(
      () => this.bundles.inspectBundle({ reference }, this.opts(options)),
      options?.signal,
    );
  }

  /** Every installed bundle (of one namespace, when given), page after page. */
  listBundles(options: { namespace?: string; pageSize?: number } & CallOptions = {}): Pager<Bundle> {
    return new Pager(async (pageToken) => {
      const page = await this.read(
        () =>
          this.bundles.listBundles(
            { namespace: options.namespace ?? "", pageSize: options.pageSize ?? 0, pageToken },
            this.opts(options),
          ),
        options.signal,
      );
      return { items: page.bundles, next: page.nextPageToken };
    });
  }

  /** Uninstalls a bundle and returns what was removed. */
  async deleteBundle(reference: string, options?: CallOptions): Promise<Bundle> {
    const response = await call(() => this.bundles.deleteBundle({ reference }, this.opts(options)));
    return required(response.bundle, "bundle");
  }

  /** An installed bundle and its archive, which `importBundle` installs. */
  async exportBundle(reference: string, options?: CallOptions): Promise<ExportedBundle> {
    return this.read(async () => {
      let bundle: Bundle | undefined;
      const chunks: Uint8Array[] = [];
      for await (const part of this.bundles.exportBundle({ reference }, this.opts(options))) {
        bundle ??= part.bundle;
        chunks.push(part.chunk);
      }
      return { bundle, archive: concatBytes(chunks) };
    }, options?.signal);
  }

  /** Installs an exported bundle archive. */
  async importBundle(
    archive: Uint8Array,
    options: { namespace?: string; force?: boolean } & CallOptions = {},
  ): Promise<Bundle> {
    async function* messages(): AsyncIterable<ImportBundleRequest> {
      yield create(ImportBundleRequestSchema, {
        item: {
          case: "options",
          value: { namespace: options.namespace ?? "", force: options.force ?? false },
        },
      });
      for (let start = 0; start < archive.length; start += CHUNK_BYTES) {
        yield create(ImportBundleRequestSchema, {
          item: { case: "chunk", value: archive.subarray(start, start + CHUNK_BYTES) },
        });
      }
    }
    const response = await call(() => this.bundles.importBundle(messages(), this.opts(options)));
    return required(response.bundle, "bundle");
  }

  /**
   * Publishes an installed bundle to an OCI registry (`target`; the server's default
   * registry when empty), with the server's credentials.
   */
  async pushBundle(reference: string, target = "", options?: CallOptions): Promise<PushBundleResponse> {
    return call(() => this.bundles.pushBundle({ reference, target }, this.opts(options)));
  }

  /** Installs a bundle from an OCI registry. */
  async pullBundle(
    reference: string,
    options: { namespace?: string; force?: boolean } & CallOptions = {},
  ): Promise<PullBundleResponse> {
    return call(() =>
      this.bundles.pullBundle(
        { reference, namespace: options.namespace ?? "", force: options.force ?? false },
        this.opts(options),
      ),
    );
  }

  /** The agents of an installed bundle, with the model this server runs each on. */
  async listAgents(bundleReference: string, options?: CallOptions): Promise<AgentInfo[]> {
    const response = await this.read(
      () => this.bundles.listAgents({ bundleReference }, this.opts(options)),
      options?.signal,
    );
    return response.agents;
  }

  async listModels(bundleReference: string, options?: CallOptions): Promise<ModelInfo[]> {
    const response = await this.read(
      () => this.bundles.listModels({ bundleReference }, this.opts(options)),
      options?.signal,
    );
    return response.models;
  }

  async listSkills(bundleReference: string, options?: CallOptions): Promise<SkillInfo[]> {
    const response = await this.read(
      () => this.bundles.listSkills({ bundleReference }, this.opts(options)),
      options?.signal,
    );
    return response.skills;
  }

  // Sessions

  /** Opens a session on an installed bundle (`name`, `name@version`, `@sha256:<hex>`, ...). */
  async createSession(bundleReference: string, options: SessionOptions = {}): Promise<Session> {
    const response = await call(() =>
      this.sessions.createSession(
        {
          bundleReference,
          agentId: options.agentId ?? "",
          model: modelSpec(options.model),
          sandboxMode: options.sandboxMode ?? SandboxMode.UNSPECIFIED,
          approvalPolicy: options.approvalPolicy ?? ApprovalPolicy.UNSPECIFIED,
          metadata: options.metadata ?? {},
          tokenBudget: options.tokenBudget ?? 0n,
        },
        this.opts(options),
      ),
    );
    return required(response.session, "session");
  }

  async getSession(sessionId: string, options?: CallOptions): Promise<Session> {
    const response = await this.read(
      () => this.sessions.getSession({ sessionId }, this.opts(options)),
      options?.signal,
    );
    return required(response.session, "session");
  }

  /** Every session (of one bundle name or agent, when given), page after page. */
  listSessions(
    options: {
      bundle?: string;
      agentId?: string;
      /** Only the sub-agent sessions this session started. */
      parentSessionId?: string;
      pageSize?: number;
    } & CallOptions = {},
  ): Pager<Session> {
    return new Pager(async (pageToken) => {
      const page = await this.read(
        () =>
          this.sessions.listSessions(
            {
              bundle: options.bundle ?? "",
              agentId: options.agentId ?? "",
              parentSessionId: options.parentSessionId ?? "",
              pageSize: options.pageSize ?? 0,
              pageToken,
            },
            this.opts(options),
          ),
        options.signal,
      );
      return { items: page.sessions, next: page.nextPageToken };
    });
  }

  async deleteSession(sessionId: string, options?: CallOptions): Promise<void> {
    await call(() => this.sessions.deleteSession({ sessionId }, this.opts(options)));
  }

  /**
   * Every tool the session's agent is offered (builtin, host and MCP ones, sorted by
   * name), read page by page, with the agent's MCP servers that could not be started
   * (`mcpServerErrors`). The server starts those not running in the session's cell.
   */
  async listSessionTools(sessionId: string, options?: CallOptions): Promise<ListSessionToolsResponse> {
    const all = create(ListSessionToolsResponseSchema);
    let pageToken = "";
    for (;;) {
      const page = await this.read(
        () => this.sessions.listSessionTools({ sessionId, pageToken }, this.opts(options)),
        options?.signal,
      );
      all.tools.push(...page.tools);
      all.mcpServerErrors = page.mcpServerErrors;
      pageToken = page.nextPageToken;
      if (!pageToken) {
        return all;
      }
    }
  }

  /**
   * A new session whose history is `sessionId`'s up to the end of a turn, given by number
   * (`afterTurn`, 1 for the first) or by the sequence of its `turn_completed` event
   * (`atSequence`), and whose workspace is what it held then. The source is untouched.
   */
  async forkSession(
    sessionId: string,
    at: { afterTurn: bigint } | { atSequence: bigint },
    options?: CallOptions,
  ): Promise<Session> {
    const point =
      "afterTurn" in at
        ? { case: "afterTurn" as const, value: at.afterTurn }
        : { case: "atSequence" as const, value: at.atSequence };
    const response = await call(() =>
      this.sessions.forkSession({ sessionId, point }, this.opts(options)),
    );
    return required(response.session, "session");
  }

  /**
   * Puts the session's conversation and workspace back to the end of turn `toTurn`; later
   * turns stay in its log but leave the model's history. Answers the session and the
   * `session_rewound` event. `FailedPrecondition` while a turn of the session runs.
   */
  async rewindSession(
    sessionId: string,
    toTurn: bigint,
    options?: CallOptions,
  ): Promise<RewindSessionResponse> {
    return call(() => this.sessions.rewindSession({ sessionId, toTurn }, this.opts(options)));
  }

  /** The files turn `turn` added, changed or removed, with unified diffs of text files. */
  async getTurnChanges(
    sessionId: string,
    turn: bigint,
    options?: CallOptions,
  ): Promise<GetTurnChangesResponse> {
    return this.read(
      () => this.sessions.getTurnChanges({ sessionId, turn }, this.opts(options)),
      options?.signal,
    );
  }

  /**
   * The session's events after `afterSequence` (0: from the start), then live ones. The
   * stream resubscribes by itself after a dropped connection, as `reconnect` allows
   * (`NO_RECONNECT`: not at all); `signal` ends it.
   */
  events(
    sessionId: string,
    options: { afterSequence?: bigint; reconnect?: ReconnectPolicy; signal?: AbortSignal } = {},
  ): EventStream {
    const stream = new EventStream(
      this.sessions,
      sessionId,
      options.afterSequence ?? 0n,
      this.headers,
      options.reconnect,
    );
    options.signal?.addEventListener("abort", () => stream.close(), { once: true });
    return stream;
  }

  /**
   * The cassette the server recorded for the session (`--record-cassettes`): one JSON
   * line per model call, as the `replay` provider plays them.
   */
  async exportCassette(sessionId: string, options?: CallOptions): Promise<Uint8Array> {
    return this.read(async () => {
      const chunks: Uint8Array[] = [];
      for await (const part of this.sessions.exportSessionCassette({ sessionId }, this.opts(options))) {
        chunks.push(part.chunk);
      }
      return concatBytes(chunks);
    }, options?.signal);
  }

  // Turns

  /** Queues a turn and returns its execution id at once. */
  async submit(sessionId: string, prompt: string, options: TurnOptions = {}): Promise<string> {
    const response = await this.submitting(
      () => this.executions.submit({ input: turnInput(sessionId, prompt, options) }, this.opts(options)),
      options.signal,
    );
    return response.executionId;
  }

  /**
   * Runs a turn and waits for it to end (a turn that needs an approval waits for it). A
   * deadline or signal that ends the call first leaves the turn running.
   */
  async run(sessionId: string, prompt: string, options: TurnOptions = {}): Promise<ExecutionStatus> {
    const response = await this.submitting(
      () => this.executions.run({ input: turnInput(sessionId, prompt, options) }, this.opts(options)),
      options.signal,
    );
    return required(response.status, "status");
  }

  /**
   * Starts a turn and streams its events as they happen, ending with its `turnCompleted`
   * event. Only this turn's events: those of another turn of the session (one queued
   * before it, say) are left out. The stream starts after the session's last event, so
   * nothing is missed, and resubscribes by itself after a dropped connection, as
   * `reconnect` allows; `signal` ends it.
   */
  async streamTurn(
    sessionId: string,
    prompt: string,
    options: TurnOptions & { reconnect?: ReconnectPolicy } = {},
  ): Promise<TurnStream> {
    const { lastSequence } = await this.getSession(sessionId, options);
    const events = this.events(sessionId, {
      afterSequence: lastSequence,
      reconnect: options.reconnect,
      signal: options.signal,
    });
    let executionId: string;
    try {
      executionId = await this.submit(sessionId, prompt, { ...options, timeoutMs: undefined });
    } catch (error) {
      events.close();
      throw error;
    }
    events.keep = (event) => event.turnId === executionId;
    events.stopWhen = (event) =>
      event.turnId === executionId && event.payload.case === "turnCompleted";
    return Object.assign(events, { executionId });
  }

  async executionStatus(executionId: string, options?: CallOptions): Promise<ExecutionStatus> {
    const response = await this.read(
      () => this.executions.getExecutionStatus({ executionId }, this.opts(options)),
      options?.signal,
    );
    return required(response.status, "status");
  }

  async cancel(executionId: string, options?: CallOptions): Promise<ExecutionStatus> {
    const response = await call(() =>
      this.executions.cancelExecution({ executionId }, this.opts(options)),
    );
    return required(response.status, "status");
  }

  /**
   * Gives a session input while a turn may be running. `InputMode.STEER` adds the text to
   * the running turn before its next model call (a `userInputAdded` event), `QUEUE`
   * submits a turn after it, `INTERRUPT` stops it (cancelled, reason
   * `interrupted_by_input`) and runs a turn with the text next. With no turn running,
   * every mode starts a turn. The answer's `disposition` says which happened;
   * `executionId` is the turn that carries the text.
   */
  async sendInput(
    sessionId: string,
    text: string,
    mode: InputMode,
    options?: CallOptions,
  ): Promise<SendInputResponse> {
    return call(() =>
      this.executions.sendInput({ sessionId, text, mode }, this.opts(options)),
    );
  }

  // Commands

  /** Runs a command in the session's sandbox and returns its exit code and output. */
  async runCommand(
    sessionId: string,
    command: Command,
    options?: CallOptions,
  ): Promise<RunSessionCommandResponse> {
    return call(() =>
      this.executions.runSessionCommand(commandRequest(sessionId, command), this.opts(options)),
    );
  }

  /** Runs a command and yields its `begin`, `output` deltas and `end` as they happen. */
  async *streamCommand(
    sessionId: string,
    command: Command,
    options?: CallOptions,
  ): AsyncIterable<StreamSessionCommandResponse> {
    try {
      yield* this.executions.streamSessionCommand(
        commandRequest(sessionId, command),
        this.opts(options),
      );
    } catch (error) {
      throw OdysseyError.from(error);
    }
  }

  // Approvals

  /** Pending approval requests, oldest first, of one session (or all), page after page. */
  listApprovals(sessionId = "", options: { pageSize?: number } & CallOptions = {}): Pager<Approval> {
    return new Pager(async (pageToken) => {
      const page = await this.read(
        () =>
          this.approvals.listApprovals(
            { sessionId, pageToken, pageSize: options.pageSize ?? 0 },
            this.opts(options),
          ),
        options.signal,
      );
      return { items: page.approvals, next: page.nextPageToken };
    });
  }

  /**
   * Follows the pending approval requests of one session (or all): a snapshot, then each
   * request filed and each that ends, decided here or by anyone else. The watch opens again
   * by itself after a dropped connection, as `reconnect` allows; `signal` ends it.
   */
  watchApprovals(
    sessionId = "",
    options: { reconnect?: ReconnectPolicy; signal?: AbortSignal } = {},
  ): ApprovalWatch {
    const watch = new ApprovalWatch(this.approvals, sessionId, this.headers, options.reconnect);
    options.signal?.addEventListener("abort", () => watch.close(), { once: true });
    return watch;
  }

  async resolveApproval(
    requestId: string,
    decision: ApprovalDecision,
    reason = "",
    options?: CallOptions,
  ): Promise<ResolveApprovalResponse> {
    return call(() =>
      this.approvals.resolveApproval({ requestId, decision, reason }, this.opts(options)),
    );
  }

  /** Lets the waiting tool call run (`always`: and matching calls of the session). */
  async approve(requestId: string, options: { always?: boolean } & CallOptions = {}): Promise<void> {
    const decision = options.always
      ? ApprovalDecision.ALLOW_ALWAYS
      : ApprovalDecision.ALLOW_ONCE;
    await this.resolveApproval(requestId, decision, "", options);
  }

  /** Refuses the waiting tool call; `reason` is shown to the model. */
  async deny(requestId: string, reason = "", options?: CallOptions): Promise<void> {
    await this.resolveApproval(requestId, ApprovalDecision.DENY, reason, options);
  }

  /**
   * Accepts a request for input (an approval of kind `ApprovalKind.INPUT`: an MCP server
   * asks a person) with `answer`, the fields of its `requestedSchema`. An answer that does
   * not match fails with INVALID_ARGUMENT naming the field (`answer.days`), and the request
   * still waits.
   */
  async answer(
    requestId: string,
    answer: JsonObject,
    options?: CallOptions,
  ): Promise<ResolveApprovalResponse> {
    return call(() =>
      this.approvals.resolveApproval(
        { requestId, action: HumanInputAction.ACCEPT, answer },
        this.opts(options),
      ),
    );
  }

  /** Refuses a request for input (`cancel`: dismisses it without a choice). */
  async decline(
    requestId: string,
    options: { cancel?: boolean } & CallOptions = {},
  ): Promise<ResolveApprovalResponse> {
    const action = options.cancel ? HumanInputAction.CANCEL : HumanInputAction.DECLINE;
    return call(() => this.approvals.resolveApproval({ requestId, action }, this.opts(options)));
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

/**
 * Odyssey's agents over the Agent2Agent protocol (A2A v1.0, gRPC binding,
 * `lf.a2a.v1.A2AService`), which the server offers on the same port as `odyssey.v1`. A
 * task is one turn; its `contextId` is the session. `client.a2a()` reads an agent's
 * extended card, sends messages, streams tasks, reads and cancels them, answers an
 * input-required task with a decision, and follows a running task from a sequence number
 * (Odyssey's `urn:odyssey:a2a:event-sequence:v1` extension), so a client that lost its
 * stream resumes with nothing missed and nothing twice.
 */

import { create, fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { createClient, type Client, type Transport } from "@connectrpc/connect";

import { call, OdysseyError, Code } from "./errors.js";
import {
  A2AService,
  Role,
  SendMessageRequestSchema,
  type AgentCard,
  type Part,
  type SendMessageRequest,
  type SendMessageResponse,
  type StreamResponse,
  type Task,
} from "./gen/lf/a2a/v1/a2a_pb.js";

/** The metadata key of every streamed update that holds the session's sequence number. */
export const SEQUENCE_KEY = "odysseySequence";

/** The extension of extended cards that holds an agent's details (model, tools, rules). */
export const DETAILS_EXTENSION = "urn:odyssey:a2a:agent-details:v1";

/** One update of a streamed task; `sequence` is 0 for the task sent first. */
export interface TaskUpdate {
  sequence: number;
  response: StreamResponse;
}

/** A decision on the approval an input-required task waits for. */
export type A2ADecision = "allow_once" | "allow_always" | "deny";

/** Options of one call: an abort signal, a deadline. */
export interface A2ACallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

/** The tenant naming `agent` of `bundle` in A2A requests; both empty: the default agent. */
export function a2aTenant(bundle = "", agent = ""): string {
  return bundle === "" && agent === "" ? "" : `${bundle}.${agent}`;
}

/** The sequence number an update carries, 0 when it carries none. */
export function sequenceOf(response: StreamResponse): number {
  const payload = response.payload;
  const metadata =
    payload.case === "statusUpdate" || payload.case === "artifactUpdate"
      ? payload.value.metadata
      : undefined;
  const value = metadata?.[SEQUENCE_KEY];
  return typeof value === "number" && value > 0 ? value : 0;
}

/** The text of a task's artifacts: the agent's answer. */
export function answerText(task: Task): string {
  return task.artifacts
    .flatMap((a) => a.parts)
    .map((p) => (p.content.case === "text" ? p.content.value : ""))
    .join("");
}

/** The A2A calls on an Odyssey client's transport and token. */
export class A2AClient {
  /** The generated client, for what the helpers leave out (push notification configs). */
  readonly stub: Client<typeof A2AService>;

  constructor(
    transport: Transport,
    private readonly headers: Record<string, string>,
  ) {
    this.stub = createClient(A2AService, transport);
  }

  private opts(options: A2ACallOptions = {}) {
    return { headers: this.headers, signal: options.signal, timeoutMs: options.timeoutMs };
  }

  /**
   * The extended card of `agent` of `bundle` (both empty: the server's default agent):
   * the public card plus the agent's details under {@link DETAILS_EXTENSION}.
   */
  agentCard(bundle = "", agent = "", options?: A2ACallOptions): Promise<AgentCard> {
    return call(() =>
      this.stub.getExtendedAgentCard({ tenant: a2aTenant(bundle, agent) }, this.opts(options)),
    );
  }

  /**
   * Sends `text` to the agent `tenant` names (`<bundle>.<agent>`; empty: the default
   * agent), in the context (session) `contextId` or a new one; the task once its turn
   * ended or waits for an approval (input-required).
   */
  async send(
    text: string,
    target: { tenant?: string; contextId?: string } = {},
    options?: A2ACallOptions,
  ): Promise<Task> {
    const request = message(target.tenant ?? "", target.contextId ?? "", "", {
      case: "text",
      value: text,
    });
    return taskOf(await call(() => this.stub.sendMessage(request, this.opts(options))));
  }

  /** Answers an input-required task (`reason` is shown to the agent on a deny). */
  async decide(
    task: Task,
    decision: A2ADecision,
    reason = "",
    options?: A2ACallOptions,
  ): Promise<Task> {
    const data = fromJson(ValueSchema, reason ? { decision, reason } : { decision });
    const request = message("", task.contextId, task.id, { case: "data", value: data });
    return taskOf(await call(() => this.stub.sendMessage(request, this.opts(options))));
  }

  /** `send` as a stream: the task, then its status updates and the text in chunks. */
  stream(
    text: string,
    target: { tenant?: string; contextId?: string } = {},
    options?: A2ACallOptions,
  ): AsyncIterable<TaskUpdate> {
    const request = message(target.tenant ?? "", target.contextId ?? "", "", {
      case: "text",
      value: text,
    });
    return updates(this.stub.sendStreamingMessage(request, this.opts(options)), 0);
  }

  /** The task, with the last `historyLength` messages of its history (unset: all). */
  get(taskId: string, historyLength?: number, options?: A2ACallOptions): Promise<Task> {
    return call(() => this.stub.getTask({ id: taskId, historyLength }, this.opts(options)));
  }

  /** Cancels the task (its turn); the task as it ended. */
  cancel(taskId: string, options?: A2ACallOptions): Promise<Task> {
    return call(() => this.stub.cancelTask({ id: taskId }, this.opts(options)));
  }

  /**
   * Follows a running task from the session's log: the task, then the updates whose
   * sequence number is above `afterSequence` (0: all of them). An ended task is refused
   * (FAILED_PRECONDITION): read it with `get`.
   */
  subscribe(taskId: string, afterSequence = 0, options?: A2ACallOptions): AsyncIterable<TaskUpdate> {
    return updates(this.stub.subscribeToTask({ id: taskId }, this.opts(options)), afterSequence);
  }
}

function message(
  tenant: string,
  contextId: string,
  taskId: string,
  content: Part["content"],
): SendMessageRequest {
  return create(SendMessageRequestSchema, {
    tenant,
    message: {
      messageId: crypto.randomUUID(),
      role: Role.USER,
      contextId,
      taskId,
      parts: [{ content }],
    },
  });
}

function taskOf(response: SendMessageResponse): Task {
  if (response.payload.case !== "task") {
    throw new OdysseyError(Code.Internal, "SendMessage answered a message instead of a task");
  }
  return response.payload.value;
}

async function* updates(
  stream: AsyncIterable<StreamResponse>,
  after: number,
): AsyncIterable<TaskUpdate> {
  try {
    for await (const response of stream) {
      const sequence = sequenceOf(response);
      if (sequence !== 0 && sequence <= after) {
        continue;
      }
      yield { sequence, response };
    }
  } catch (error) {
    throw OdysseyError.from(error);
  }
}

/**
 * TypeScript SDK for the Odyssey agent runtime.
 *
 * `OdysseyClient` wraps the generated `odyssey.v1` stubs (in `./gen/odyssey/v1/*_pb.js`,
 * also exported as `@odyssey-ai/client/gen/odyssey/v1/<file>_pb`) with a call for every
 * RPC: bundles, sessions, turns and their event streams (`for await`), commands,
 * approvals (listed, watched live, answered), server info. Every call takes `{ signal, timeoutMs }`; lists are pagers that
 * fetch every page; reads retry UNAVAILABLE. Event streams resume from the last sequence
 * seen and resubscribe by themselves after a dropped connection. Failed calls throw an
 * {@link OdysseyError} with the gRPC code and the status's decoded details.
 *
 * This is the Node.js entry (gRPC over HTTP/2); `@odyssey-ai/client/web` is the browser's
 * (gRPC-Web), with the same calls.
 */

export { OdysseyClient, type ConnectOptions } from "./node.js";
export {
  OdysseyClientCore,
  Pager,
  READ_RETRY,
  type CallOptions,
  type Command,
  type ExportedBundle,
  type Model,
  type SessionOptions,
  type TurnOptions,
  type TurnStream,
} from "./client.js";
export {
  DEFAULT_RECONNECT,
  EventStream,
  NO_RECONNECT,
  reconnectDelayMs,
  type ReconnectPolicy,
} from "./events.js";
export { ApprovalWatch, type ApprovalChange } from "./watch.js";
export { OdysseyError, Code, type ErrorDetails, type FieldViolation } from "./errors.js";
export { packProject } from "./archive.js";
export {
  A2AClient,
  DETAILS_EXTENSION,
  SEQUENCE_KEY,
  a2aTenant,
  answerText,
  sequenceOf,
  type A2ACallOptions,
  type A2ADecision,
  type TaskUpdate,
} from "./a2a.js";
export * from "./gen/odyssey/v1/approval_pb.js";
export * from "./gen/odyssey/v1/bundle_pb.js";
export * from "./gen/odyssey/v1/common_pb.js";
export * from "./gen/odyssey/v1/events_pb.js";
export * from "./gen/odyssey/v1/execution_pb.js";
export * from "./gen/odyssey/v1/server_pb.js";
export * from "./gen/odyssey/v1/session_pb.js";

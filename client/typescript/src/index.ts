/**
 * TypeScript SDK for the Odyssey agent runtime.
 *
 * `OdysseyClient` wraps the generated `odyssey.v1` stubs (in `./gen/odyssey/v1/*_pb.js`,
 * also exported as `@odyssey-ai/client/gen/odyssey/v1/<file>_pb`) with idiomatic calls:
 * install a bundle from a folder, open sessions, run turns and stream their events,
 * resolve approvals, resume a stream from the last sequence seen (event streams also
 * resubscribe by themselves after a dropped connection). Failed calls throw an
 * {@link OdysseyError} carrying the gRPC code.
 */

export { OdysseyClient, type ConnectOptions, type TurnStream } from "./client.js";
export {
  DEFAULT_RECONNECT,
  EventStream,
  NO_RECONNECT,
  reconnectDelayMs,
  type ReconnectPolicy,
} from "./events.js";
export { OdysseyError, Code, type ErrorDetails, type FieldViolation } from "./errors.js";
export { packProject } from "./archive.js";
export * from "./gen/odyssey/v1/approval_pb.js";
export * from "./gen/odyssey/v1/bundle_pb.js";
export * from "./gen/odyssey/v1/common_pb.js";
export * from "./gen/odyssey/v1/events_pb.js";
export * from "./gen/odyssey/v1/execution_pb.js";
export * from "./gen/odyssey/v1/server_pb.js";
export * from "./gen/odyssey/v1/session_pb.js";

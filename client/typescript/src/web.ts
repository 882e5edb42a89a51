/**
 * The browser entry of the TypeScript SDK (`@odyssey-ai/client/web`): the same calls as
 * the Node entry, over gRPC-Web (HTTP/1.1 or HTTP/2 `fetch`), which odysseyd serves on its
 * main port. Nothing here uses Node's built-ins, so a bundler packs it for a page.
 *
 * A page served from another origin needs the operator's `--cors-origin`; one served by
 * the server itself (the console) needs nothing. gRPC-Web cannot stream a request, so the
 * two client-streaming calls, `buildBundle` and `importBundle`, are the Node entry's (or
 * the CLI's): here they fail with UNIMPLEMENTED saying so.
 */

import { createGrpcWebTransport } from "@connectrpc/connect-web";

import { OdysseyClientCore, tokenInterceptor } from "./client.js";
import { Code, OdysseyError } from "./errors.js";
import type { ReconnectPolicy } from "./events.js";
import type { Bundle } from "./gen/odyssey/v1/bundle_pb.js";

const NO_REQUEST_STREAMS =
  "gRPC-Web cannot stream a request: install bundles from Node (@odyssey-ai/client) or the CLI";

export interface WebConnectOptions {
  /** The server's URL as the page reaches it: `https://odyssey.example.com:8472`. */
  baseUrl: string;
  /** Sent as `authorization: Bearer <token>` on every call. */
  token?: string;
  /** How reads retry after UNAVAILABLE (`READ_RETRY` unless set; `NO_RECONNECT`: never). */
  readRetry?: ReconnectPolicy;
  /** The `fetch` to use (the global one unless given). */
  fetch?: typeof globalThis.fetch;
}

/** A connection to an odysseyd server from a browser (or any `fetch`): gRPC-Web. */
export class OdysseyClient extends OdysseyClientCore {
  /** Prepares a client; each call is a `fetch` of its own. */
  static connect(options: WebConnectOptions): OdysseyClient {
    const transport = createGrpcWebTransport({
      baseUrl: options.baseUrl,
      fetch: options.fetch,
      interceptors: options.token ? [tokenInterceptor(options.token)] : [],
    });
    return new OdysseyClient(transport, options.token, { readRetry: options.readRetry });
  }

  /** Not over gRPC-Web (a client stream): UNIMPLEMENTED, saying where to do it. */
  override async buildBundle(): Promise<Bundle> {
    throw new OdysseyError(Code.Unimplemented, `BuildBundle: ${NO_REQUEST_STREAMS}`);
  }

  /** Not over gRPC-Web (a client stream): UNIMPLEMENTED, saying where to do it. */
  override async importBundle(): Promise<Bundle> {
    throw new OdysseyError(Code.Unimplemented, `ImportBundle: ${NO_REQUEST_STREAMS}`);
  }
}

export {
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
export * from "./gen/odyssey/v1/approval_pb.js";
export * from "./gen/odyssey/v1/bundle_pb.js";
export * from "./gen/odyssey/v1/common_pb.js";
export * from "./gen/odyssey/v1/events_pb.js";
export * from "./gen/odyssey/v1/execution_pb.js";
export * from "./gen/odyssey/v1/server_pb.js";
export * from "./gen/odyssey/v1/session_pb.js";

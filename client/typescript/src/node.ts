import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";

import { A2AClient } from "./a2a.js";
import { packProject } from "./archive.js";
import { OdysseyClientCore, READ_MAX_BYTES, tokenInterceptor, type CallOptions } from "./client.js";
import type { ReconnectPolicy } from "./events.js";
import type { Bundle } from "./gen/odyssey/v1/bundle_pb.js";

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
  /** How reads retry after UNAVAILABLE (`READ_RETRY` unless set; `NO_RECONNECT`: never). */
  readRetry?: ReconnectPolicy;
}

/** A connection to an odysseyd server from Node.js: gRPC over HTTP/2, via Connect. */
export class OdysseyClient extends OdysseyClientCore {
  /** Prepares a client; it connects on the first call. */
  static connect(options: ConnectOptions): OdysseyClient {
    const tls = options.tls ?? false;
    const baseUrl = `${tls ? "https" : "http"}://${options.address}`;
    // The transport's HTTP/2 connection, held here so that close() can end it.
    const sessionManager = new Http2SessionManager(
      baseUrl,
      { pingIntervalMs: PING_INTERVAL_MS, pingTimeoutMs: PING_TIMEOUT_MS },
      typeof tls === "object" ? { ca: tls.ca } : {},
    );
    const transport = createGrpcTransport({
      baseUrl,
      sessionManager,
      readMaxBytes: READ_MAX_BYTES,
      interceptors: options.token ? [tokenInterceptor(options.token)] : [],
    });
    const client = new OdysseyClient(transport, options.token, { readRetry: options.readRetry });
    client.closeConnection = () => sessionManager.abort();
    return client;
  }

  /** Packs a bundle project folder, uploads it, and returns the installed bundle. */
  async installBundle(
    folder: string,
    options: { namespace?: string; force?: boolean } & CallOptions = {},
  ): Promise<Bundle> {
    return this.buildBundle(await packProject(folder), options);
  }

  /**
   * The server's agents over the Agent2Agent protocol (A2A v1.0), on this connection and
   * token: cards and tasks (see `A2AClient`). Node only: the browser entry leaves it out.
   */
  a2a(): A2AClient {
    return new A2AClient(this.transport, this.headers);
  }
}

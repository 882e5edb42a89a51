import { Code, ConnectError } from "@connectrpc/connect";

export { Code };

/**
 * A call the server refused or could not answer. `code` is the gRPC status code (Connect's
 * `Code` has the same numbers: `Code.NotFound` is NOT_FOUND); `message` is the server's,
 * naming what was wrong; `codeName` is the code's gRPC name (`"NOT_FOUND"`).
 */
export class OdysseyError extends Error {
  readonly code: Code;
  readonly codeName: string;

  constructor(code: Code, message: string, cause?: unknown) {
    super(`${grpcName(code)}: ${message}`, { cause });
    this.name = "OdysseyError";
    this.code = code;
    this.codeName = grpcName(code);
  }

  /**
   * Converts what a Connect call threw; errors that are not RPC failures pass through. A
   * failure of the connection itself is UNAVAILABLE, as in every gRPC client (Connect
   * reports an unverifiable certificate as INTERNAL, a reset connection as ABORTED, a
   * connection torn down under a call as CANCELED).
   */
  static from(error: unknown): unknown {
    if (error instanceof OdysseyError || !(error instanceof ConnectError)) {
      return error;
    }
    const code = isConnectionFailure(error) ? Code.Unavailable : error.code;
    return new OdysseyError(code, error.rawMessage, error);
  }
}

/** Node's codes for a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ERR_STREAM_PREMATURE_CLOSE",
]);

/**
 * Whether a Connect error is the connection's rather than the server's answer: Node's
 * network, TLS (`ERR_TLS_*`, `ERR_SSL_*`, OpenSSL's certificate checks) or HTTP/2 session
 * errors in its causes, or a stream the HTTP/2 layer closed with CANCEL (the SDK's calls
 * are never cancelled by the caller; an event stream's own close is handled apart). A
 * status the server sent carries no such cause.
 */
function isConnectionFailure(error: ConnectError): boolean {
  let cause: unknown = error.cause;
  // Bounded: a cause chain may loop.
  for (let depth = 0; cause instanceof Error && depth < 16; depth += 1, cause = cause.cause) {
    const code = (cause as { code?: unknown }).code;
    if (
      typeof code === "string" &&
      (CONNECTION_CODES.has(code) ||
        /^ERR_(TLS|SSL|HTTP2)_/.test(code) ||
        /CERT|SIGNATURE/.test(code))
    ) {
      return true;
    }
  }
  return (
    error.code === Code.Canceled &&
    error.rawMessage.startsWith("http/2 stream closed with error code CANCEL")
  );
}

/** `Code.NotFound` → `"NOT_FOUND"`; `Code.Canceled` → `"CANCELLED"`, gRPC's spelling. */
function grpcName(code: Code): string {
  if (code === Code.Canceled) {
    return "CANCELLED";
  }
  return (Code[code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** Runs one call, rethrowing RPC failures as {@link OdysseyError}. */
export async function call<T>(rpc: () => Promise<T>): Promise<T> {
  try {
    return await rpc();
  } catch (error) {
    throw OdysseyError.from(error);
  }
}

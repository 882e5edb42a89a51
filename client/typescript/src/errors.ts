import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

export { Code };

/** One field of a request that was wrong: its path as the request spells it, and why. */
export interface FieldViolation {
  field: string;
  description: string;
}

/** The `google.rpc` details of a status, decoded. */
export interface ErrorDetails {
  /** `ErrorInfo.reason`: a stable name of the failure (`"SESSION_NOT_FOUND"`). */
  reason: string;
  /** `ErrorInfo.domain` (`"odyssey.ai"`). */
  domain: string;
  /** `ErrorInfo.metadata`. */
  metadata: Record<string, string>;
  /** The request fields at fault (a `BadRequest` detail). */
  fieldViolations: FieldViolation[];
  /** How long to wait before trying again (a `RetryInfo` detail), when given. */
  retryDelayMs?: number;
}

/**
 * A call the server refused or could not answer. `code` is the gRPC status code (Connect's
 * `Code` has the same numbers: `Code.NotFound` is NOT_FOUND); `message` is the server's,
 * naming what was wrong; `codeName` is the code's gRPC name (`"NOT_FOUND"`,
 * `"CANCELLED"`). The status's details are decoded: `reason`, `domain` and `metadata`
 * from its `ErrorInfo` (empty when the failure did not come from the server),
 * `fieldViolations` from its `BadRequest`, `retryDelayMs` from its `RetryInfo`.
 */
export class OdysseyError extends Error {
  readonly code: Code;
  readonly codeName: string;
  readonly reason: string;
  readonly domain: string;
  readonly metadata: Record<string, string>;
  readonly fieldViolations: FieldViolation[];
  readonly retryDelayMs?: number;

  constructor(code: Code, message: string, cause?: unknown, details?: Partial<ErrorDetails>) {
    super(`${grpcName(code)}: ${message}`, { cause });
    this.name = "OdysseyError";
    this.code = code;
    this.codeName = grpcName(code);
    this.reason = details?.reason ?? "";
    this.domain = details?.domain ?? "";
    this.metadata = details?.metadata ?? {};
    this.fieldViolations = details?.fieldViolations ?? [];
    this.retryDelayMs = details?.retryDelayMs;
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
    return new OdysseyError(code, error.rawMessage, error, decodeDetails(error));
  }
}

/**
 * The `google.rpc` details Connect received undecoded (`{ type, value }`), read from their
 * wire format: the SDK needs no generated googleapis code for three small messages.
 * Details that do not decode are left out: the code and message still say what happened.
 */
function decodeDetails(error: ConnectError): ErrorDetails {
  const details: ErrorDetails = { reason: "", domain: "", metadata: {}, fieldViolations: [] };
  for (const detail of error.details) {
    if (!("type" in detail) || !(detail.value instanceof Uint8Array)) {
      continue;
    }
    try {
      switch (detail.type) {
        case "google.rpc.ErrorInfo":
          for (const [no, value] of fields(detail.value)) {
            if (no === 1) details.reason = text(value);
            else if (no === 2) details.domain = text(value);
            else if (no === 3 && value instanceof Uint8Array) {
              const entry = new Map(fields(value));
              details.metadata[text(entry.get(1))] = text(entry.get(2));
            }
          }
          break;
        case "google.rpc.BadRequest":
          for (const [no, value] of fields(detail.value)) {
            if (no === 1 && value instanceof Uint8Array) {
              const violation = new Map(fields(value));
              details.fieldViolations.push({
                field: text(violation.get(1)),
                description: text(violation.get(2)),
              });
            }
          }
          break;
        case "google.rpc.RetryInfo":
          for (const [no, value] of fields(detail.value)) {
            if (no === 1 && value instanceof Uint8Array) {
              const duration = new Map(fields(value));
              const seconds = Number(duration.get(1) ?? 0);
              const nanos = Number(duration.get(2) ?? 0);
              details.retryDelayMs = seconds * 1000 + nanos / 1e6;
            }
          }
          break;
      }
    } catch {
      // An undecodable detail is skipped.
    }
  }
  return details;
}

/** The fields of a message: a bigint for varints, the bytes of length-delimited ones. */
function fields(bytes: Uint8Array): [number, bigint | Uint8Array][] {
  const reader = new BinaryReader(bytes);
  const found: [number, bigint | Uint8Array][] = [];
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    if (wireType === WireType.Varint) {
      found.push([no, BigInt(reader.int64())]);
    } else if (wireType === WireType.LengthDelimited) {
      found.push([no, reader.bytes()]);
    } else {
      reader.skip(wireType, no);
    }
  }
  return found;
}

function text(value: bigint | Uint8Array | undefined): string {
  return value instanceof Uint8Array ? new TextDecoder().decode(value) : "";
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

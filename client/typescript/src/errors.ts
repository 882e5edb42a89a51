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

  /** Converts what a Connect call threw; errors that are not RPC failures pass through. */
  static from(error: unknown): unknown {
    if (error instanceof OdysseyError || !(error instanceof ConnectError)) {
      return error;
    }
    return new OdysseyError(error.code, error.rawMessage, error);
  }
}

/** `Code.NotFound` → `"NOT_FOUND"`. */
function grpcName(code: Code): string {
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

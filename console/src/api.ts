// The console's one connection to odysseyd: the TypeScript SDK's browser entry over
// gRPC-Web, to the page's own origin. The login cookie goes with every call (same origin);
// the console never holds the token.

import {
  Code,
  OdysseyClient,
  OdysseyError,
  type ApprovalWatch,
  type Approval,
} from "@odyssey-ai/client/web";

export const client = OdysseyClient.connect({ baseUrl: location.origin });

export function isUnauthenticated(error: unknown): boolean {
  return error instanceof OdysseyError && error.code === Code.Unauthenticated;
}

export function describe(error: unknown): string {
  if (error instanceof OdysseyError) return error.message;
  return error instanceof Error ? error.message : String(error);
}

/** Trades the token for the login cookie; `null` when it worked, else why not. */
export async function login(token: string): Promise<string | null> {
  const response = await fetch("/console/login", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  if (response.ok) return null;
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    return body.error?.message ?? `login failed (${response.status})`;
  } catch {
    return `login failed (${response.status})`;
  }
}

export async function logout(): Promise<void> {
  await fetch("/console/logout", { method: "POST" });
}

/**
 * The pending approvals of every session, kept by one WatchApprovals stream for the whole
 * page: the badge and the approvals page read it, and hear each change.
 */
export class PendingApprovals {
  pending: Approval[] = [];
  private watch?: ApprovalWatch;
  private readonly listeners = new Set<() => void>();
  private stopped = false;

  start(onError: (error: unknown) => void): void {
    this.stopped = false;
    void this.run(onError);
  }

  private async run(onError: (error: unknown) => void): Promise<void> {
    while (!this.stopped) {
      this.watch = client.watchApprovals("");
      try {
        for await (const _change of this.watch) {
          this.pending = [...this.watch.pending];
          this.notify();
        }
      } catch (error) {
        onError(error);
        if (isUnauthenticated(error)) return;
      }
      // The server ended the stream (a shutdown) or it failed: watch again shortly; the
      // new watch starts from a fresh snapshot.
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }

  stop(): void {
    this.stopped = true;
    this.watch?.close();
  }

  of(sessionId: string): Approval[] {
    return this.pending.filter((a) => a.sessionId === sessionId);
  }

  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }
}

export const approvals = new PendingApprovals();

import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { OdysseyClient, type ConnectOptions } from "../src/index.js";

/** The repository root (this file runs from client/typescript/build-test/test/). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..", "..");
export const TOKEN = "typescript-sdk-test-token";

export interface TestServer {
  address: string;
  stop(): Promise<void>;
}

/**
 * Starts a real odysseyd ($ODYSSEYD, else target/debug/odysseyd) on a free loopback port
 * with a temporary home and further `flags` (e.g. TLS), and waits until a client with
 * `tls` sees it SERVING. With `home` (kept when the server stops) and `listen`, a second
 * server on the same ones is the first one restarted.
 */
export async function startServer(
  options: { flags?: string[]; tls?: ConnectOptions["tls"]; home?: string; listen?: string } = {},
): Promise<TestServer> {
  const binary = process.env.ODYSSEYD || join(REPO, "target", "debug", "odysseyd");
  if (!existsSync(binary)) {
    throw new Error(`no odysseyd at ${binary}: run \`cargo build\` or set ODYSSEYD`);
  }
  // Not a private temp folder: sandboxed commands run as another user, who must be able
  // to reach the home's sandbox cells.
  const owned = options.home === undefined;
  const home = options.home ?? (await serverHome());
  const child = spawn(
    binary,
    [
      "--listen", options.listen ?? "127.0.0.1:0",
      "--home", home,
      "--log-format", "json",
      "--heartbeat-seconds", "1",
      "--auth-token", TOKEN,
      ...(options.flags ?? []),
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const stop = async () => {
    await stopChild(child);
    if (owned) {
      await rm(home, { recursive: true, force: true });
    }
  };
  try {
    const address = await servingAddress(child);
    const client = OdysseyClient.connect({ address, tls: options.tls });
    await client.waitUntilServing();
    return { address, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A new home folder for odysseyd; the caller removes it. */
export async function serverHome(): Promise<string> {
  const home = await mkdtemp(join(tmpdir(), "odyssey-ts-sdk-"));
  await chmod(home, 0o755);
  return home;
}

/** The address from the server's `odysseyd serving` log line (it binds port 0). */
function servingAddress(child: ChildProcess): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error("odysseyd did not start within 60 s")), 60_000);
    child.once("exit", (code) => reject(new Error(`odysseyd exited with ${code}`)));
    const lines = createInterface({ input: child.stderr! });
    lines.on("line", (line) => {
      if (process.env.ODYSSEY_TEST_LOG) {
        process.stderr.write(`${line}\n`);
      }
      try {
        const record = JSON.parse(line) as { fields?: { message?: string; addr?: string } };
        if (record.fields?.message === "odysseyd serving" && record.fields.addr) {
          clearTimeout(timer);
          resolvePromise(record.fields.addr);
        }
      } catch {
        // not a JSON log line
      }
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  await exited;
  clearTimeout(timer);
}

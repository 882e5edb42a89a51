// A session's event stream outlives the server it was opened on: the server stops (the
// stream's connection drops), starts again on the same address and home, and the stream
// resubscribes by itself after its last sequence, counted once in `reconnects`, then
// carries the events of a turn run after the restart.

import assert from "node:assert/strict";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { test } from "node:test";

import { ApprovalPolicy, OdysseyClient, type SessionEvent } from "../src/index.js";
import { REPO, TOKEN, serverHome, startServer } from "./server.js";

/** A loopback address no one listens on (yet). */
async function freeAddress(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return `127.0.0.1:${port}`;
}

test("a stream resubscribes once through a server restart", async () => {
  const home = await serverHome();
  const listen = await freeAddress();
  try {
    let server = await startServer({ home, listen });
    const client = OdysseyClient.connect({ address: listen, token: TOKEN });
    await client.installBundle(join(REPO, "bundles", "demo"));
    const session = await client.createSession("demo", { approvalPolicy: ApprovalPolicy.NEVER });
    const before = await client.run(session.id, "Give me a tour");

    const stream = client.events(session.id, { afterSequence: before.lastSequence });
    const seen: SessionEvent[] = [];
    const reading = (async () => {
      for await (const event of stream) {
        seen.push(event);
        if (event.payload.case === "turnCompleted") {
          return;
        }
      }
    })();
    // Let the server answer the subscription before it goes (a first subscribe that got
    // no answer is reported, never retried): its first heartbeat (one a second) says so.
    for (let i = 0; i < 100 && stream.heartbeats === 0; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(stream.heartbeats > 0, "no heartbeat on the stream within 5 s");
    await server.stop();
    server = await startServer({ home, listen });
    try {
      // A client of its own: Run is a write, never retried.
      const fresh = OdysseyClient.connect({ address: listen, token: TOKEN });
      const after = await fresh.run(session.id, "Give me a tour");
      await reading;
      fresh.close();
      client.close();
      assert.equal(stream.reconnects, 1);
      assert.deepEqual(
        seen.map((e) => e.sequence),
        Array.from(
          { length: Number(after.lastSequence - before.lastSequence) },
          (_, i) => before.lastSequence + BigInt(i + 1),
        ),
      );
      assert.deepEqual([...new Set(seen.map((e) => e.turnId))], [after.executionId]);
    } finally {
      await server.stop();
    }
  } finally {
    await rm(home, { recursive: true, force: true });
  }
});

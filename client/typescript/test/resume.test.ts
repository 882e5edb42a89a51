// Automatic resume: an event stream whose connection is cut mid-turn resubscribes by
// itself after its last sequence. The events the server appends while the connection is
// down arrive after it, with no gap and no duplicate.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  Code,
  DEFAULT_RECONNECT,
  ExecutionState,
  NO_RECONNECT,
  OdysseyClient,
  OdysseyError,
  TurnOutcome,
  reconnectDelayMs,
  type SessionEvent,
} from "../src/index.js";
import { Proxy } from "./proxy.js";
import { REPO, TOKEN, startServer, type TestServer } from "./server.js";

/** How long the connection stays cut: several retries fail before one gets through. */
const OUTAGE_MS = 1_000;

let server: TestServer;
let client: OdysseyClient;

before(async () => {
  server = await startServer();
  client = OdysseyClient.connect({ address: server.address, token: TOKEN });
  await client.installBundle(join(REPO, "bundles", "demo"));
});

after(async () => {
  await server?.stop();
});

async function waitUntilEnded(executionId: string): Promise<void> {
  const ended = [
    ExecutionState.COMPLETED,
    ExecutionState.FAILED,
    ExecutionState.CANCELLED,
    ExecutionState.INTERRUPTED,
  ];
  const deadline = Date.now() + 60_000;
  while (!ended.includes((await client.executionStatus(executionId)).state)) {
    assert.ok(Date.now() < deadline, "the turn did not end within 60 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test("a cut stream resumes by itself", async () => {
  const proxy = await Proxy.start(server.address);
  try {
    const session = await client.createSession("demo");
    const relayed = OdysseyClient.connect({ address: proxy.address, token: TOKEN });
    const turn = await relayed.streamTurn(session.id, "Give me a tour");
    const seen: SessionEvent[] = [];
    let cutAt = -1;
    for await (const event of turn) {
      seen.push(event);
      if (event.payload.case === "permissionRequested") {
        // Cut the stream while the turn waits, let the turn run to its end while nothing
        // gets through, then let the retries through.
        proxy.cut();
        cutAt = seen.length;
        await client.approve(event.payload.value.requestId);
        await waitUntilEnded(turn.executionId);
        setTimeout(() => proxy.mend(), OUTAGE_MS);
      }
    }
    // One outage, one resubscription, however many attempts failed during it.
    assert.equal(turn.reconnects, 1);
    const first = Number(seen[0].sequence);
    assert.deepEqual(
      seen.map((e) => Number(e.sequence)),
      seen.map((_, i) => first + i),
      "a gap or a duplicate",
    );
    assert.equal(seen[0].payload.case, "turnStarted");
    assert.ok(cutAt > 0);
    assert.ok(seen.slice(cutAt).some((e) => e.payload.case === "approvalResolved"));
    const last = seen[seen.length - 1].payload;
    assert.equal(last.case, "turnCompleted");
    assert.equal(last.value.outcome, TurnOutcome.COMPLETED, last.value.error);
  } finally {
    await proxy.close();
  }
});

test("without reconnect a cut stream throws UNAVAILABLE", async () => {
  const proxy = await Proxy.start(server.address);
  try {
    const session = await client.createSession("demo");
    const relayed = OdysseyClient.connect({ address: proxy.address, token: TOKEN });
    const events = relayed.events(session.id, { reconnect: NO_RECONNECT });
    const iterator = events[Symbol.asyncIterator]();
    // A heartbeat arrives every second on an idle session: wait until one is in.
    const pending = iterator.next();
    while (events.heartbeats === 0) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    proxy.cut();
    await assert.rejects(
      pending,
      (error: unknown) => error instanceof OdysseyError && error.code === Code.Unavailable,
    );
    assert.equal(events.reconnects, 0);
  } finally {
    await proxy.close();
  }
});

test("the backoff doubles up to the cap", () => {
  const delays = [1, 2, 4, 10, 200].map((n) => reconnectDelayMs(DEFAULT_RECONNECT, n));
  assert.deepEqual(delays, [100, 200, 800, 5_000, 5_000]);
});

// Two turns of one session at once: turn A waits on an approval while turn B is queued
// behind it. B's stream carries B's events only; A's (its approval included) never show,
// so an approval loop on B's stream cannot answer A's request.

import assert from "node:assert/strict";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";

import { OdysseyClient, TurnOutcome, type SessionEvent } from "../src/index.js";
import { REPO, TOKEN, startServer, type TestServer } from "./server.js";

let server: TestServer;
let client: OdysseyClient;

before(async () => {
  server = await startServer();
  client = OdysseyClient.connect({ address: server.address, token: TOKEN });
});

after(async () => {
  await server?.stop();
});

/** Approves the first request of the given turn as soon as it is pending (60 s). */
async function approveTurn(sessionId: string, executionId: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const pending = await client.listApprovals(sessionId).all();
    const mine = pending.find((approval) => approval.executionId === executionId);
    if (mine !== undefined) {
      await client.approve(mine.requestId);
      return;
    }
    await sleep(50);
  }
  throw new Error(`turn ${executionId} never asked for an approval`);
}

test("a turn stream carries only its own turn's events", async () => {
  await client.installBundle(join(REPO, "bundles", "demo"));
  const session = await client.createSession("demo");

  const first = await client.submit(session.id, "Give me a tour");
  const turn = await client.streamTurn(session.id, "Give me a tour");
  const start = turn.lastSequence;
  // A runs while B's stream is open: its approval, tool call and completion all happen
  // after B subscribed.
  const approver = approveTurn(session.id, first);

  const seen: SessionEvent[] = [];
  for await (const event of turn) {
    seen.push(event);
    if (event.payload.case === "permissionRequested") {
      // B's own, if it asks.
      await client.approve(event.payload.value.requestId);
    }
  }
  await approver;

  assert.notEqual(turn.executionId, first);
  assert.deepEqual([...new Set(seen.map((e) => e.turnId))], [turn.executionId]);
  const kinds = seen.map((e) => e.payload.case);
  assert.equal(kinds[0], "turnStarted");
  assert.equal(kinds.at(-1), "turnCompleted");
  const last = seen.at(-1)!;
  assert.equal(
    last.payload.case === "turnCompleted" && last.payload.value.outcome,
    TurnOutcome.COMPLETED,
  );

  // The overlap was real: A's events were appended while B's stream was open.
  const others: (string | undefined)[] = [];
  const everything = client.events(session.id, { afterSequence: start });
  for await (const event of everything) {
    if (event.turnId === first) {
      others.push(event.payload.case);
    }
    if (event.sequence >= last.sequence) {
      break;
    }
  }
  assert.ok(others.includes("approvalResolved") && others.includes("turnCompleted"), others.join(" "));
});

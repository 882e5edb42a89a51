// The whole SDK against a real server: install the demo bundle, run a turn whose replayed
// model calls Bash (which the agent's rules say must ask), approve it from the client,
// drop the event stream mid-turn and resume it with no gap and no duplicate.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  ApprovalDecision,
  Code,
  OdysseyClient,
  OdysseyError,
  TurnOutcome,
  type SessionEvent,
} from "../src/index.js";
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

test("a turn with an approval, streamed, dropped and resumed", async () => {
  const bundle = await client.installBundle(join(REPO, "bundles", "demo"));
  assert.equal(bundle.ref?.name, "demo");
  assert.match(bundle.ref?.digest ?? "", /^sha256:/);
  const session = await client.createSession("demo");
  assert.equal(session.agentId, "guide");

  const seen: SessionEvent[] = [];
  const turn = await client.streamTurn(session.id, "Give me a tour");
  // Disconnect after a few events, while the turn is still streaming.
  for await (const event of turn) {
    seen.push(event);
    if (seen.length === 3) {
      break;
    }
  }
  assert.equal(turn.lastSequence, seen[2].sequence);

  let approvals = 0;
  const resumed = client.events(session.id, { afterSequence: turn.lastSequence });
  for await (const event of resumed) {
    seen.push(event);
    if (event.payload.case === "permissionRequested") {
      const request = event.payload.value;
      assert.equal(request.tool, "Bash");
      const pending = await client.listApprovals(session.id).all();
      assert.deepEqual(pending.map((a) => a.requestId), [request.requestId]);
      // What a person is shown: the call, control characters escaped (none here).
      assert.ok(request.display.length > 0 && !request.controlCharacters);
      assert.equal(pending[0].display, request.display);
      await client.approve(request.requestId);
      approvals += 1;
    }
    if (event.payload.case === "turnCompleted" && event.turnId === turn.executionId) {
      break;
    }
  }

  assert.deepEqual(
    seen.map((e) => Number(e.sequence)),
    seen.map((_, i) => i + 1),
    "a gap or a duplicate",
  );
  assert.ok(seen.every((e) => e.turnId === turn.executionId));
  assert.equal(seen[0].payload.case, "turnStarted");
  assert.equal(approvals, 1);
  const resolved = seen.flatMap((e) =>
    e.payload.case === "approvalResolved" ? [e.payload.value] : [],
  );
  assert.deepEqual(resolved.map((r) => r.decision), [ApprovalDecision.ALLOW_ONCE]);
  const bash = seen.flatMap((e) =>
    e.payload.case === "toolCallFinished" && e.payload.value.tool === "Bash" ? [e.payload.value] : [],
  );
  assert.equal(bash.length, 1);
  assert.ok(bash[0].success, bash[0].result);
  const last = seen[seen.length - 1].payload;
  assert.equal(last.case, "turnCompleted");
  assert.equal(last.value.outcome, TurnOutcome.COMPLETED, last.value.error);
  assert.match(last.value.response, /approval flow/);

  // A full replay from the start is the same events, in the same order.
  const replay = client.events(session.id);
  const replayed: string[] = [];
  for await (const event of replay) {
    replayed.push(event.id);
    if (replayed.length === seen.length) {
      break;
    }
  }
  assert.deepEqual(replayed, seen.map((e) => e.id));
  const status = await client.executionStatus(turn.executionId);
  assert.equal(status.lastSequence, seen[seen.length - 1].sequence);
});

test("server info names the store: files, with no replica", async () => {
  const info = await client.serverInfo();
  assert.equal(info.store?.kind, "files");
  assert.equal(info.store?.replicaId, "");
  assert.deepEqual(info.store?.replicas, []);
});

test("an unknown session is NOT_FOUND", async () => {
  const missing = randomUUID();
  await assert.rejects(client.getSession(missing), (error: unknown) => {
    assert.ok(error instanceof OdysseyError);
    assert.equal(error.code, Code.NotFound);
    assert.equal(error.codeName, "NOT_FOUND");
    assert.match(error.message, new RegExp(missing));
    return true;
  });
  await assert.rejects(
    (async () => {
      for await (const _ of client.events(missing)) {
        // no event can arrive
      }
    })(),
    (error: unknown) => error instanceof OdysseyError && error.code === Code.NotFound,
  );
  await assert.rejects(
    client.submit(missing, "hello"),
    (error: unknown) => error instanceof OdysseyError && error.code === Code.NotFound,
  );
  await assert.rejects(
    client.getSession("not-a-session-id"),
    (error: unknown) => error instanceof OdysseyError && error.code === Code.InvalidArgument,
  );
});

test("calls without the token are UNAUTHENTICATED", async () => {
  const anonymous = OdysseyClient.connect({ address: server.address });
  assert.equal(await anonymous.health(), "SERVING");
  await assert.rejects(
    anonymous.serverInfo(),
    (error: unknown) => error instanceof OdysseyError && error.code === Code.Unauthenticated,
  );
});

test("codeName is gRPC's name of the code", () => {
  assert.equal(new OdysseyError(Code.Canceled, "stopped").codeName, "CANCELLED");
  assert.equal(new OdysseyError(Code.NotFound, "gone").codeName, "NOT_FOUND");
  assert.equal(new OdysseyError(Code.ResourceExhausted, "full").codeName, "RESOURCE_EXHAUSTED");
});

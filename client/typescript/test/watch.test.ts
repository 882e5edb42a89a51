// WatchApprovals and Session.state against a real server: a turn's Bash call appears in a
// watch, another client decides it, the watch sees it go, and the session's state follows.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  ApprovalDecision,
  ApprovalResolution,
  Code,
  NO_RECONNECT,
  OdysseyClient,
  OdysseyError,
  SessionState,
  type ApprovalChange,
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

test("a watch follows a request decided by another client", async () => {
  await client.installBundle(join(REPO, "bundles", "demo"));
  const session = await client.createSession("demo");
  assert.equal(session.state, SessionState.IDLE);
  const watch = client.watchApprovals(session.id);
  const changes = watch[Symbol.asyncIterator]();
  const next = async (): Promise<ApprovalChange> => {
    const { value, done } = await changes.next();
    assert.ok(!done, "the watch ended");
    return value;
  };
  const first = await next();
  assert.equal(first.case, "snapshot");
  assert.deepEqual(first.case === "snapshot" ? first.value.approvals : null, []);

  const execution = await client.submit(session.id, "Give me a tour");
  const added = await next();
  assert.equal(added.case, "added");
  if (added.case !== "added") return;
  assert.equal(added.value.executionId, execution);
  assert.equal(added.value.tool, "Bash");
  assert.ok(added.value.reason.length > 0, "the rule that asked");
  assert.deepEqual(watch.pending.map((a) => a.requestId), [added.value.requestId]);
  assert.equal((await client.getSession(session.id)).state, SessionState.WAITING_FOR_APPROVAL);

  const other = OdysseyClient.connect({ address: server.address, token: TOKEN });
  await other.approve(added.value.requestId, { always: true });
  const removed = await next();
  assert.equal(removed.case, "removed");
  if (removed.case !== "removed") return;
  assert.equal(removed.value.requestId, added.value.requestId);
  assert.equal(removed.value.decision, ApprovalDecision.ALLOW_ALWAYS);
  assert.equal(removed.value.resolution, ApprovalResolution.DECIDED);
  assert.deepEqual(watch.pending, []);
  watch.close();

  for (let i = 0; i < 400; i++) {
    if ((await client.getSession(session.id)).state === SessionState.IDLE) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail("the session never became idle");
});

test("watching an unknown session is NOT_FOUND", async () => {
  const watch = client.watchApprovals("0190a4c1-0000-7000-8000-000000000000", {
    reconnect: NO_RECONNECT,
  });
  await assert.rejects(
    async () => {
      for await (const change of watch) {
        assert.fail(`unexpected ${change.case}`);
      }
    },
    (error: unknown) => error instanceof OdysseyError && error.code === Code.NotFound,
  );
});

// SendInput against a real server, while the demo's turn waits for its Bash approval:
// steered input joins that turn, interrupt stops it and runs the input next; an idle
// session starts a turn; a bad mode is refused naming the field.

import assert from "node:assert/strict";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";

import {
  Code,
  ExecutionState,
  InputDisposition,
  InputMode,
  OdysseyClient,
  OdysseyError,
  type ExecutionStatus,
} from "../src/index.js";
import { REPO, TOKEN, startServer, type TestServer } from "./server.js";

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

async function waitForApproval(sessionId: string, executionId: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    for await (const approval of client.listApprovals(sessionId)) {
      if (approval.executionId === executionId) return;
    }
    await sleep(50);
  }
  assert.fail(`turn ${executionId} never asked`);
}

async function ended(executionId: string): Promise<ExecutionStatus> {
  const done = [ExecutionState.COMPLETED, ExecutionState.FAILED, ExecutionState.CANCELLED];
  for (let i = 0; i < 1200; i++) {
    const status = await client.executionStatus(executionId);
    if (done.includes(status.state)) return status;
    await sleep(50);
  }
  assert.fail(`turn ${executionId} never ended`);
}

test("steer, then interrupt, a turn waiting for its approval", async () => {
  const session = await client.createSession("demo");
  const running = await client.submit(session.id, "Give me a tour");
  await waitForApproval(session.id, running);

  const steered = await client.sendInput(session.id, "Keep it short", InputMode.STEER);
  assert.equal(steered.disposition, InputDisposition.STEERED);
  assert.equal(steered.executionId, running);

  const stopped = await client.sendInput(session.id, "Stop the tour", InputMode.INTERRUPT);
  assert.equal(stopped.disposition, InputDisposition.INTERRUPTED);
  assert.equal(stopped.interruptedExecutionId, running);
  const old = await client.executionStatus(running);
  assert.equal(old.state, ExecutionState.CANCELLED);
  assert.ok(old.error.includes(stopped.executionId), old.error);
  assert.equal((await ended(stopped.executionId)).state, ExecutionState.COMPLETED);
});

test("an idle session starts a turn; a bad mode is refused", async () => {
  const session = await client.createSession("demo");
  const started = await client.sendInput(session.id, "Give me a tour", InputMode.QUEUE);
  assert.equal(started.disposition, InputDisposition.STARTED);
  await client.cancel(started.executionId);

  try {
    await client.sendInput(session.id, "hi", InputMode.UNSPECIFIED);
    assert.fail("the call succeeded");
  } catch (error) {
    assert.ok(error instanceof OdysseyError, String(error));
    assert.equal(error.code, Code.InvalidArgument);
    assert.deepEqual(error.fieldViolations.map((v) => v.field), ["mode"]);
  }
});

// The SDK's A2A client against a real server: the demo agent's extended card, a task that
// waits for an approval answered with a decision, its stream resumed from a sequence
// number with nothing missed and nothing twice, and A2A's errors.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  Code,
  DETAILS_EXTENSION,
  OdysseyClient,
  OdysseyError,
  answerText,
  type TaskUpdate,
} from "../src/index.js";
import { TaskState } from "../src/gen/lf/a2a/v1/a2a_pb.js";
import { REPO, TOKEN, startServer, type TestServer } from "./server.js";

let server: TestServer;
let client: OdysseyClient;

before(async () => {
  server = await startServer();
  client = OdysseyClient.connect({ address: server.address, token: TOKEN });
});

after(async () => {
  client?.close();
  await server?.stop();
});

async function untilInputRequired(updates: AsyncIterable<TaskUpdate>): Promise<TaskUpdate[]> {
  const seen: TaskUpdate[] = [];
  for await (const update of updates) {
    seen.push(update);
    const payload = update.response.payload;
    if (payload.case === "statusUpdate" && payload.value.status?.state === TaskState.INPUT_REQUIRED) {
      break;
    }
  }
  return seen;
}

const sequences = (updates: TaskUpdate[]) => updates.map((u) => u.sequence).filter((n) => n > 0);

test("an A2A card, a task answered with a decision, a stream resumed from a sequence", async () => {
  await client.installBundle(join(REPO, "bundles", "demo"));
  const a2a = client.a2a();

  const card = await a2a.agentCard("demo", "guide");
  assert.equal(card.name, "guide");
  const details = card.capabilities?.extensions.find((e) => e.uri === DETAILS_EXTENSION);
  const permissions = details?.params?.["permissions"] as { ask: string[] } | undefined;
  assert.ok(permissions?.ask.includes("Bash"), JSON.stringify(details?.params));

  const task = await a2a.send("Give me a tour", { tenant: "demo.guide" });
  assert.equal(task.status?.state, TaskState.INPUT_REQUIRED);

  const whole = await untilInputRequired(a2a.subscribe(task.id));
  assert.equal(whole[0].response.payload.case, "task");
  const all = sequences(whole);
  const handled = all[2];
  const resumed = await untilInputRequired(a2a.subscribe(task.id, handled));
  assert.deepEqual(sequences(resumed), all.slice(3));

  const decided = await a2a.decide(task, "allow_once");
  assert.equal(decided.status?.state, TaskState.COMPLETED);
  assert.match(answerText(decided), /That was the approval flow/);
  const got = await a2a.get(task.id, 1);
  assert.equal(got.history.length, 1);

  await assert.rejects(
    async () => {
      for await (const _ of a2a.subscribe(task.id)) {
        // an ended task cannot be followed
      }
    },
    (e: unknown) => e instanceof OdysseyError && e.code === Code.FailedPrecondition,
  );

  const streamed: TaskUpdate[] = [];
  for await (const update of a2a.stream("Anything else?", { contextId: task.contextId })) {
    streamed.push(update);
  }
  const last = streamed[streamed.length - 1].response.payload;
  assert.ok(last.case === "statusUpdate" && last.value.status?.state === TaskState.COMPLETED);
  const later = sequences(streamed);
  assert.ok(later[0] > all[all.length - 1]);
  assert.deepEqual(later, [...later].sort((a, b) => a - b));

  await assert.rejects(
    a2a.get(`${task.contextId}.00000000-0000-0000-0000-000000000000`),
    (e: unknown) => e instanceof OdysseyError && e.code === Code.NotFound && e.reason === "TASK_NOT_FOUND",
  );
});

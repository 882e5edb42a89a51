// A sub-agent through the SDK: the delegate bundle's planner hands the writing to its
// coder, whose child session is listed under the planner's, and the planner's log holds
// the child's start and end.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  ExecutionState,
  OdysseyClient,
  TurnOutcome,
  type SubagentFinished,
  type SubagentStarted,
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

test("a sub-agent runs in a child session listed under its parent", async () => {
  await client.installBundle(join(REPO, "bundles", "delegate"));
  const session = await client.createSession("delegate");
  assert.equal(session.agentId, "planner");
  assert.equal(session.parentSessionId, "");

  const status = await client.run(session.id, "Get the notes written");
  assert.equal(status.state, ExecutionState.COMPLETED, status.error);
  assert.match(status.response, /hello from the coder/);

  const children = await client.listSessions({ parentSessionId: session.id }).all();
  assert.equal(children.length, 1);
  const child = children[0];
  assert.equal(child.agentId, "coder");
  assert.equal(child.parentSessionId, session.id);
  assert.equal(child.parentCallId, "call_agent");

  let started: SubagentStarted | undefined;
  let finished: SubagentFinished | undefined;
  for await (const event of client.events(session.id)) {
    if (event.payload.case === "subagentStarted") {
      started = event.payload.value;
    }
    if (event.payload.case === "subagentFinished") {
      finished = event.payload.value;
    }
    if (event.sequence === status.lastSequence) {
      break;
    }
  }
  assert.equal(started?.childSessionId, child.id);
  assert.equal(started?.workspace, "shared");
  assert.equal(finished?.outcome, TurnOutcome.COMPLETED);
  assert.equal(finished?.usage?.inputTokens, 200n);
  const info = await client.serverInfo();
  assert.equal(info.limits?.maxSubagentDepth, 3);
});

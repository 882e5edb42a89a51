// An MCP server's request for input (bundles/mcp-input: trip.py asks during its tool call)
// on the approvals surface: listed with its message and schema, a bad answer refused
// naming the field, a good one reaching the server; another declined.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  ApprovalKind,
  Code,
  ExecutionState,
  HumanInputAction,
  OdysseyClient,
  OdysseyError,
  type Approval,
  type SessionEvent,
} from "../src/index.js";
import { REPO, TOKEN, startServer, type TestServer } from "./server.js";

let server: TestServer;
let client: OdysseyClient;

before(async () => {
  server = await startServer();
  client = OdysseyClient.connect({ address: server.address, token: TOKEN });
  await client.installBundle(join(REPO, "bundles", "mcp-input"));
});

after(async () => {
  await server?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function asked(sessionId: string): Promise<Approval> {
  for (let i = 0; i < 1200; i++) {
    const pending = await client.listApprovals(sessionId).all();
    if (pending.length > 0) return pending[0];
    await sleep(50);
  }
  throw new Error("the server never asked");
}

async function turnEvents(sessionId: string, executionId: string): Promise<SessionEvent[]> {
  const seen: SessionEvent[] = [];
  const stream = client.events(sessionId);
  for await (const event of stream) {
    if (event.turnId !== executionId) continue;
    seen.push(event);
    if (event.payload.case === "turnCompleted") break;
  }
  stream.close();
  return seen;
}

function results(events: SessionEvent[]): string[] {
  return events.flatMap((e) => (e.payload.case === "toolCallFinished" ? [e.payload.value.result] : []));
}

test("a request for input is answered, a bad answer refused naming the field", async () => {
  const session = await client.createSession("mcp-input");
  const executionId = await client.submit(session.id, "Plan a trip");
  const request = await asked(session.id);
  assert.equal(request.kind, ApprovalKind.INPUT);
  assert.equal(request.message, "Where to, and for how long?");
  assert.equal(request.tool, "mcp__trip__plan");
  assert.deepEqual(request.requestedSchema?.required, ["city"]);

  await assert.rejects(client.answer(request.requestId, { city: "Oslo", days: 0 }), (e) => {
    assert.ok(e instanceof OdysseyError);
    assert.equal(e.code, Code.InvalidArgument);
    assert.deepEqual(
      e.fieldViolations.map((v) => v.field),
      ["answer.days"],
    );
    return true;
  });
  await client.answer(request.requestId, { city: "Oslo", days: 2 });
  const events = await turnEvents(session.id, executionId);
  const answered = events.flatMap((e) =>
    e.payload.case === "humanInputAnswered" ? [e.payload.value] : [],
  );
  assert.equal(answered.length, 1);
  assert.equal(answered[0].action, HumanInputAction.ACCEPT);
  assert.equal(answered[0].answer?.city, "Oslo");
  assert.deepEqual(results(events), ["trip to Oslo for 2 days"]);
  assert.equal((await client.executionStatus(executionId)).state, ExecutionState.COMPLETED);
});

test("a request for input is declined", async () => {
  const session = await client.createSession("mcp-input");
  const executionId = await client.submit(session.id, "Plan a trip");
  const request = await asked(session.id);
  await client.decline(request.requestId);
  const events = await turnEvents(session.id, executionId);
  assert.deepEqual(results(events), ["no trip: the person chose decline"]);
});

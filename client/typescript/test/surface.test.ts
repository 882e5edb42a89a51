// Every RPC of odyssey.v1 through the SDK's calls, against a real server: bundles
// (scaffold, build, inspect, list page by page, export, import, delete; push and pull
// refused without a registry), sessions and turns with their options, commands, the raw
// clients carrying the token; a deadline that expires; streams ended by a signal.

import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { join } from "node:path";
import { after, before, test } from "node:test";

import {
  ApprovalPolicy,
  Code,
  ExecutionState,
  FileChangeKind,
  OdysseyClient,
  OdysseyError,
  SandboxMode,
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

async function failure(promise: Promise<unknown>): Promise<OdysseyError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof OdysseyError, String(error));
    return error;
  }
  assert.fail("the call succeeded");
}

test("bundle calls", async () => {
  const scaffold = await client.initBundle("scaffold");
  assert.ok(gunzipSync(scaffold).length > 0);
  assert.equal((await client.buildBundle(scaffold)).ref?.name, "scaffold");
  const inspected = await client.inspectBundle("demo");
  assert.deepEqual(inspected.agents.map((a) => a.id), ["guide"]);

  // One bundle a page: the pager follows every page.
  const names: string[] = [];
  for await (const bundle of client.listBundles({ pageSize: 1 })) {
    names.push(bundle.ref?.name ?? "");
  }
  assert.ok(names.includes("demo") && names.includes("scaffold"), names.join(" "));
  assert.deepEqual((await client.listAgents("demo")).map((a) => a.id), ["guide"]);
  assert.ok((await client.listModels("demo")).length > 0);
  assert.deepEqual((await client.listSkills("demo")).map((s) => s.name), ["tour"]);

  const exported = await client.exportBundle("demo");
  assert.equal(exported.bundle?.ref?.name, "demo");
  const imported = await client.importBundle(exported.archive, { namespace: "copies" });
  assert.equal(imported.ref?.namespace, "copies");
  assert.equal(imported.ref?.digest, exported.bundle?.ref?.digest);
  assert.equal((await client.deleteBundle("scaffold")).ref?.name, "scaffold");

  const pushed = await failure(client.pushBundle("demo", "127.0.0.1:1/demo:0.1.0", { timeoutMs: 30_000 }));
  assert.notEqual(pushed.reason, "");
  const pulled = await failure(client.pullBundle("127.0.0.1:1/demo:0.1.0", { timeoutMs: 30_000 }));
  assert.notEqual(pulled.reason, "");
});

test("session, turn and command calls", async () => {
  const session = await client.createSession("demo", {
    agentId: "guide",
    sandboxMode: SandboxMode.READ_ONLY,
    approvalPolicy: ApprovalPolicy.NEVER,
    metadata: { team: "sdk" },
    tokenBudget: 1_000_000n,
  });
  assert.equal(session.sandboxMode, SandboxMode.READ_ONLY);
  assert.equal(session.approvalPolicy, ApprovalPolicy.NEVER);
  assert.equal(session.tokenBudget, 1_000_000n);
  assert.equal(session.metadata.team, "sdk");
  const other = await client.createSession("demo");
  const ids = (await client.listSessions({ bundle: "demo", pageSize: 1 }).all()).map((s) => s.id);
  assert.ok(ids.includes(session.id) && ids.includes(other.id));

  // Approval policy never: the Bash call that would ask is denied, and the turn ends.
  const status = await client.run(session.id, "Give me a tour", { metadata: { ticket: "42" } });
  assert.equal(status.state, ExecutionState.COMPLETED, status.error);
  assert.equal((await client.executionStatus(status.executionId)).state, status.state);
  const submitted = await client.submit(session.id, "Give me a tour", { metadata: { ticket: "43" } });
  await client.cancel(submitted);

  const result = await client.runCommand(other.id, { argv: ["echo", "hello"] });
  assert.equal(result.exitCode, 0);
  assert.equal(result.stdout, "hello\n");
  const kinds: (string | undefined)[] = [];
  let output = "";
  for await (const item of client.streamCommand(other.id, { argv: "echo streamed" })) {
    kinds.push(item.item.case);
    if (item.item.case === "output") {
      output += item.item.value.text;
    }
  }
  assert.equal(kinds[0], "begin");
  assert.equal(kinds.at(-1), "end");
  assert.match(output, /streamed/);
  assert.equal((await failure(client.exportCassette(session.id))).code, Code.FailedPrecondition);

  // The raw clients carry the token too.
  const raw = await client.sessions.getSession({ sessionId: other.id });
  assert.equal(raw.session?.id, other.id);
  await client.deleteSession(other.id);
  assert.equal((await failure(client.getSession(other.id))).reason, "SESSION_NOT_FOUND");
});

test("fork, rewind and turn changes", async () => {
  const session = await client.createSession("demo", {
    sandboxMode: SandboxMode.WORKSPACE_WRITE,
    approvalPolicy: ApprovalPolicy.NEVER,
  });
  const shell = async (id: string, line: string): Promise<string> => {
    const result = await client.runCommand(id, { argv: ["sh", "-c", line] });
    assert.equal(result.exitCode, 0, result.stderr);
    return result.stdout;
  };
  await shell(session.id, "echo one > notes.txt");
  const status = await client.run(session.id, "Give me a tour");
  assert.equal(status.state, ExecutionState.COMPLETED, status.error);

  const changes = await client.getTurnChanges(session.id, 1n);
  assert.deepEqual(
    changes.changes.map((c) => [c.path, c.change]),
    [["notes.txt", FileChangeKind.ADDED]],
  );
  assert.match(changes.changes[0].unifiedDiff, /\+one/);

  const fork = await client.forkSession(session.id, { afterTurn: 1n });
  assert.equal(fork.forkedFrom, session.id);
  assert.equal(fork.forkedAt?.turn, 1n);
  assert.equal(await shell(fork.id, "cat notes.txt"), "one\n");

  await shell(session.id, "echo two > notes.txt");
  const rewound = await client.rewindSession(session.id, 1n);
  assert.equal(rewound.event?.payload.case, "sessionRewound");
  assert.equal(await shell(session.id, "cat notes.txt"), "one\n");
  const refused = await failure(client.forkSession(session.id, { atSequence: 1n }));
  assert.equal(refused.code, Code.InvalidArgument);
});

test("a deadline that expires", async () => {
  const session = await client.createSession("demo");
  // The turn waits for an approval nobody gives: Run's deadline passes first.
  const error = await failure(client.run(session.id, "Give me a tour", { timeoutMs: 1_000 }));
  assert.equal(error.codeName, "DEADLINE_EXCEEDED");
  for (let i = 0; i < 200; i += 1) {
    const pending = await client.listApprovals(session.id).all();
    if (pending.length > 0) {
      await client.deny(pending[0].requestId, "not now");
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail("the turn never asked");
});

test("a stream ended by its signal, and a call cancelled by one", async () => {
  const session = await client.createSession("demo");
  const stream = client.events(session.id, { signal: AbortSignal.timeout(500) });
  for await (const event of stream) {
    assert.fail(`a quiet session yielded ${event.id}`);
  }
  const controller = new AbortController();
  const running = client.run(session.id, "Give me a tour", { signal: controller.signal });
  setTimeout(() => controller.abort(), 300);
  assert.equal((await failure(running)).codeName, "CANCELLED");
  const pending = await client.listApprovals(session.id).all();
  for (const approval of pending) {
    await client.deny(approval.requestId, "not now");
  }
});

test("close() ends the client's connection and its open streams", async () => {
  const session = await client.createSession("demo");
  const own = OdysseyClient.connect({ address: server.address, token: TOKEN });
  const stream = own.events(session.id);
  // Closed once the server has answered the subscription (its first heartbeat).
  const closing = (async () => {
    for (let i = 0; i < 100 && stream.heartbeats === 0; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    own.close();
  })();
  let ended = "end";
  try {
    for await (const event of stream) {
      assert.fail(`a quiet session yielded ${event.id}`);
    }
  } catch (error) {
    ended = error instanceof OdysseyError ? error.codeName : String(error);
  }
  await closing;
  assert.equal(ended, "CANCELLED");
});

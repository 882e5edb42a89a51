// Every failed call throws an OdysseyError with the server's status decoded: the code and
// its name, the message, and the google.rpc details (ErrorInfo reason and domain,
// BadRequest field violations, RetryInfo delay), from real refusals.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Code, OdysseyClient, OdysseyError } from "../src/index.js";
import { call } from "../src/errors.js";
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

/** What `promise` rejects with, as an OdysseyError. */
async function failure(promise: Promise<unknown>): Promise<OdysseyError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof OdysseyError, String(error));
    return error;
  }
  assert.fail("the call succeeded");
}

test("an unknown session is NOT_FOUND with its reason", async () => {
  const missing = randomUUID();
  const error = await failure(client.getSession(missing));
  assert.equal(error.code, Code.NotFound);
  assert.equal(error.codeName, "NOT_FOUND");
  assert.match(error.message, new RegExp(missing));
  assert.equal(error.reason, "SESSION_NOT_FOUND");
  assert.equal(error.domain, "odyssey.ai");
  assert.deepEqual(error.fieldViolations, []);
  assert.equal(error.retryDelayMs, undefined);
});

test("a bad request names the field", async () => {
  const error = await failure(client.getSession("not-a-session-id"));
  assert.equal(error.codeName, "INVALID_ARGUMENT");
  assert.notEqual(error.reason, "");
  assert.deepEqual(error.fieldViolations.map((v) => v.field), ["session_id"]);
  assert.match(error.fieldViolations[0].description, /not-a-session-id/);
});

test("a full queue says when to retry", async () => {
  // One worker and room for one queued turn: turns that wait on an approval fill both,
  // and the next submit is refused with a RetryInfo delay.
  const small = await startServer({ flags: ["--worker-count", "1", "--queue-capacity", "1"] });
  try {
    const busy = OdysseyClient.connect({ address: small.address, token: TOKEN });
    await busy.installBundle(join(REPO, "bundles", "demo"));
    const error = await failure(
      (async () => {
        // The raw client: submit() itself would wait the delay out and send it again.
        for (let i = 0; i < 6; i += 1) {
          const session = await busy.createSession("demo");
          await call(() =>
            busy.executions.submit({ input: { sessionId: session.id, prompt: "Tour" } }, { headers: busy.headers }),
          );
        }
      })(),
    );
    assert.equal(error.code, Code.ResourceExhausted);
    assert.equal(error.reason, "QUEUE_FULL");
    assert.ok((error.retryDelayMs ?? 0) > 0, String(error.retryDelayMs));
  } finally {
    await small.stop();
  }
});

test("a submit refused for a full queue is sent again after the delay", async () => {
  // The queue frees up while submit() waits the server's RetryInfo delay: the same submit
  // then goes through, and the caller never sees QUEUE_FULL.
  const small = await startServer({ flags: ["--worker-count", "1", "--queue-capacity", "1"] });
  try {
    const busy = OdysseyClient.connect({ address: small.address, token: TOKEN });
    await busy.installBundle(join(REPO, "bundles", "demo"));
    const [running, queued, late] = [
      await busy.createSession("demo"),
      await busy.createSession("demo"),
      await busy.createSession("demo"),
    ];
    const first = await busy.submit(running.id, "Give me a tour");
    await busy.submit(queued.id, "Give me a tour");
    const freed = setTimeout(() => void busy.cancel(first).catch(() => {}), 300);
    const started = Date.now();
    try {
      assert.ok(await busy.submit(late.id, "Give me a tour"));
    } finally {
      clearTimeout(freed);
    }
    assert.ok(Date.now() - started >= 300, "it waited for the queue");
    busy.close();
  } finally {
    await small.stop();
  }
});

test("a connection failure has no reason", async () => {
  const nowhere = OdysseyClient.connect({ address: "127.0.0.1:1" });
  const error = await failure(nowhere.serverInfo());
  assert.equal(error.codeName, "UNAVAILABLE");
  assert.equal(error.reason, "");
});

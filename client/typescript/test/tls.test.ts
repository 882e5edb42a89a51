// TLS end to end: a real odysseyd serving a certificate from a test CA. A client that
// trusts the CA runs a turn with its token; one that does not, or speaks plaintext, fails
// with UNAVAILABLE; the token is still required over TLS.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { Code, OdysseyClient, OdysseyError } from "../src/index.js";
import { issuePki, type Pki } from "./pki.js";
import { REPO, TOKEN, startServer, type TestServer } from "./server.js";

let dir: string;
let pki: Pki;
let server: TestServer;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), "odyssey-ts-pki-"));
  pki = await issuePki(dir, "odyssey test CA");
  server = await startServer({
    flags: ["--tls-cert", pki.certFile, "--tls-key", pki.keyFile],
    tls: { ca: pki.ca },
  });
});

after(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

test("a client trusting the CA runs a turn with its token", async () => {
  const client = OdysseyClient.connect({
    address: server.address,
    token: TOKEN,
    tls: { ca: pki.ca },
  });
  await client.installBundle(join(REPO, "bundles", "demo"));
  const session = await client.createSession("demo");
  const turn = await client.streamTurn(session.id, "Give me a tour");
  for await (const event of turn) {
    if (event.payload.case === "permissionRequested") {
      await client.deny(event.payload.value.requestId, "not over TLS");
    }
  }
  const status = await client.executionStatus(turn.executionId);
  assert.equal(status.lastSequence, turn.lastSequence);
});

test("the token is still required over TLS", async () => {
  const anonymous = OdysseyClient.connect({ address: server.address, tls: { ca: pki.ca } });
  await assert.rejects(
    anonymous.getSession(randomUUID()),
    (error: unknown) => error instanceof OdysseyError && error.code === Code.Unauthenticated,
  );
});

test("a client that does not trust the CA is UNAVAILABLE", async () => {
  const stranger = await issuePki(await mkdtemp(join(dir, "stranger-")), "another CA");
  for (const tls of [{ ca: stranger.ca }, true]) {
    const client = OdysseyClient.connect({ address: server.address, token: TOKEN, tls });
    await assert.rejects(client.serverInfo(), (error: unknown) => {
      assert.ok(error instanceof OdysseyError, String(error));
      assert.equal(error.code, Code.Unavailable);
      assert.match(error.message, /certificate/i);
      return true;
    });
  }
});

test("a plaintext client is UNAVAILABLE", async () => {
  const plaintext = OdysseyClient.connect({ address: server.address, token: TOKEN });
  await assert.rejects(
    plaintext.serverInfo(),
    (error: unknown) => error instanceof OdysseyError && error.code === Code.Unavailable,
  );
});

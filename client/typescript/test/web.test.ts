// The browser entry (`@odyssey-ai/client/web`): bundled for a browser by esbuild, which
// refuses any Node built-in, then run against a real odysseyd over gRPC-Web (`fetch`, as a
// page does): server info, a bundle, a turn with its approval streamed to its end, and a
// decoded error.

import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

import { build } from "esbuild";

import { OdysseyClient as NodeClient } from "../src/index.js";
import type * as Web from "../src/web.js";
import { REPO, TOKEN, startServer, type TestServer } from "./server.js";

let server: TestServer;
let bundleDir: string;
let web: typeof Web;

before(async () => {
  server = await startServer();
  bundleDir = await mkdtemp(join(tmpdir(), "odyssey-web-"));
  const entry = join(dirname(fileURLToPath(import.meta.url)), "..", "src", "web.js");
  const outfile = join(bundleDir, "odyssey-web.mjs");
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: "browser",
    format: "esm",
    outfile,
    logLevel: "silent",
  });
  assert.deepEqual(result.errors, []);
  web = (await import(pathToFileURL(outfile).href)) as typeof Web;
});

after(async () => {
  await server?.stop();
  if (bundleDir) {
    await rm(bundleDir, { recursive: true, force: true });
  }
});

test("the browser bundle holds no Node built-in", async () => {
  const node = await build({
    entryPoints: [join(dirname(fileURLToPath(import.meta.url)), "..", "src", "index.js")],
    bundle: true,
    platform: "browser",
    format: "esm",
    write: false,
    logLevel: "silent",
  }).then(
    () => "bundled",
    (error: { errors?: { text: string }[] }) => error.errors?.map((e) => e.text).join("; ") ?? "",
  );
  // The Node entry cannot be bundled for a browser (it reads folders, speaks HTTP/2): the
  // check above is not vacuous.
  assert.match(node, /node:|Could not resolve/);
});

test("a turn over gRPC-Web, its approval answered, streamed to its end", async () => {
  const client = web.OdysseyClient.connect({ baseUrl: `http://${server.address}`, token: TOKEN });
  const info = await client.serverInfo();
  assert.ok(info.version.length > 0);

  // A bundle is a client stream, which gRPC-Web cannot send: installed from Node.
  await assert.rejects(client.buildBundle(), (error) => {
    assert.ok(error instanceof web.OdysseyError);
    assert.equal(error.codeName, "UNIMPLEMENTED");
    return true;
  });
  const node = NodeClient.connect({ address: server.address, token: TOKEN });
  await node.installBundle(join(REPO, "bundles", "demo"));
  node.close();
  const bundles = await client.listBundles().all();
  assert.deepEqual(
    bundles.map((b) => b.ref?.name),
    ["demo"],
  );
  const session = await client.createSession("demo");
  const kinds: string[] = [];
  let approvals = 0;
  for await (const event of await client.streamTurn(session.id, "Give me a tour")) {
    kinds.push(event.payload.case ?? "");
    if (event.payload.case === "permissionRequested") {
      approvals += 1;
      await client.approve(event.payload.value.requestId);
    }
  }
  assert.equal(kinds[0], "turnStarted");
  assert.equal(kinds.at(-1), "turnCompleted");
  assert.ok(approvals >= 1, "the demo's Bash call asks");
});

test("errors over gRPC-Web carry their code and reason", async () => {
  const client = web.OdysseyClient.connect({ baseUrl: `http://${server.address}`, token: TOKEN });
  await assert.rejects(client.getSession("0190a4c1-0000-7000-8000-000000000000"), (error) => {
    assert.ok(error instanceof web.OdysseyError);
    assert.equal(error.codeName, "NOT_FOUND");
    assert.equal(error.reason, "SESSION_NOT_FOUND");
    return true;
  });
  const anonymous = web.OdysseyClient.connect({ baseUrl: `http://${server.address}` });
  await assert.rejects(anonymous.serverInfo(), (error) => {
    assert.ok(error instanceof web.OdysseyError);
    assert.equal(error.codeName, "UNAUTHENTICATED");
    return true;
  });
});

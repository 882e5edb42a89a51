// The console in a real browser: Debian's chromium, driven by playwright-core, against a
// real odysseyd (--console) whose agent is a replayed model that says hostile things.
// Logs in (a wrong token refused), watches a turn stream, has its connection cut mid-turn
// (a TCP relay in front of the server) and follows again with no event missed, approves
// the turn's Bash call from the session page and sees the output, denies the next one
// from the approvals page, imports a bundle archive from the bundles page, reloads and finds every event once, answers an MCP server's request for input from the
// approvals page (a bad answer refused naming the field), and checks that a script in the model's text, a command's
// output or a file name is shown as text and never runs (the page's Content-Security-
// Policy forbids inline script too). axe-core reports no serious violation on any page,
// and no page scrolls sideways at 390 px. No request leaves the server's origin.
//
// Needs: target/debug/odysseyd and odyssey (or ODYSSEYD, ODYSSEY_CLI), chromium
// (CHROMIUM, default /usr/bin/chromium). CONSOLE_SCREENSHOTS=DIR saves a screenshot of
// each page there (docs/console/).

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createServer, connect } from "node:net";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

import axe from "axe-core";
import { chromium } from "playwright-core";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ODYSSEYD = process.env.ODYSSEYD || join(REPO, "target", "debug", "odysseyd");
const CLI = process.env.ODYSSEY_CLI || join(REPO, "target", "debug", "odyssey");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SHOTS = process.env.CONSOLE_SCREENSHOTS;
const TOKEN = randomBytes(16).toString("hex");
const WIDTH = 390;

// A model that writes markup and escape sequences, then a Bash call whose output and
// file name hold markup too; a second turn asks again (to be denied).
const HOSTILE_TEXT = `<img src=x onerror="window.__pwned='text'"> <script>window.__pwned='script'</script> \u001b[31mred`;
const FILE_NAME = `<img src=x onerror=window.__pwned=1>.txt`;
const CASSETTE = [
  {
    text: [HOSTILE_TEXT, " and a file:"],
    tool_calls: [
      {
        id: "call_x",
        name: "Bash",
        arguments: { command: `printf '<b>bold</b>' > '${FILE_NAME}'; ls; echo '<script>window.__pwned=2</script>'` },
      },
    ],
    chunk_delay_ms: 40,
  },
  { text: ["Done: ", "<b>not bold</b>"] },
  {
    text: ["Once more."],
    tool_calls: [{ id: "call_y", name: "Bash", arguments: { command: "echo second" } }],
  },
  { text: ["Understood, I will not."] },
];

let server;
let proxy;
let browser;
let home;
let project;
let archive;

function run(file, args) {
  return promisify(execFile)(file, args, { timeout: 60_000 }).then((r) => r.stdout);
}

/** Starts odysseyd on free loopback ports; resolves with its gRPC and HTTP addresses. */
async function startServer() {
  home = await mkdtemp(join(tmpdir(), "odyssey-console-"));
  await chmod(home, 0o755);
  const child = spawn(ODYSSEYD, [
    "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--console",
    "--home", home, "--auth-token", TOKEN, "--log-format", "json", "--heartbeat-seconds", "1",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  const lines = createInterface({ input: child.stderr });
  const found = {};
  await new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => reject(new Error("odysseyd did not start in 60 s")), 60_000);
    child.on("exit", (code) => reject(new Error(`odysseyd exited with ${code}`)));
    lines.on("line", (line) => {
      let record;
      try { record = JSON.parse(line); } catch { return; }
      const fields = record.fields ?? {};
      if (fields.message === "odysseyd serving") found.grpc = fields.addr;
      if (fields.message === "HTTP gateway listening") found.http = fields.addr;
      if (found.grpc && found.http) { clearTimeout(timer); resolvePromise(); }
    });
  });
  child.removeAllListeners("exit");
  return { child, grpc: `http://${found.grpc}`, base: `http://${found.http}` };
}

/**
 * A TCP relay in front of the gateway, which the browser uses as the console's origin:
 * `cut()` drops every open connection (as a network failure would) and keeps listening.
 */
async function startProxy(target) {
  const [host, port] = target.replace("http://", "").split(":");
  const sockets = new Set();
  const relay = createServer((client) => {
    const upstream = connect(Number(port), host);
    sockets.add(client).add(upstream);
    client.pipe(upstream).pipe(client);
    const drop = () => { client.destroy(); upstream.destroy(); sockets.delete(client); sockets.delete(upstream); };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  });
  await new Promise((ok) => relay.listen(0, "127.0.0.1", ok));
  return {
    base: `http://127.0.0.1:${relay.address().port}`,
    cut: () => { for (const socket of sockets) socket.destroy(); },
    close: () => relay.close(),
  };
}

async function cli(...args) {
  return run(CLI, ["--server", server.grpc, "--token", TOKEN, ...args]);
}

before(async () => {
  server = await startServer();
  proxy = await startProxy(server.base);
  project = await mkdtemp(join(tmpdir(), "odyssey-hostile-"));
  await mkdir(join(project, "agents", "mallory"), { recursive: true });
  await mkdir(join(project, "cassettes"));
  await writeFile(join(project, "odyssey.bundle.yaml"), `apiVersion: odyssey.ai/bundle.v1
kind: AgentBundle
metadata:
  name: hostile
  version: 0.1.0
spec:
  agents:
    - id: mallory
      spec: agents/mallory/agent.yaml
      default: true
  tools:
    - { name: Bash, source: builtin }
  sandbox:
    mode: workspace_write
`);
  await writeFile(join(project, "agents", "mallory", "agent.yaml"), `apiVersion: odyssey.ai/v1
kind: Agent
metadata:
  name: mallory
  version: 0.1.0
spec:
  kind: prompt
  prompt: Say hostile things.
  model:
    provider: replay
    name: mallory
  tools:
    ask: [Bash]
`);
  await writeFile(join(project, "cassettes", "mallory.jsonl"), CASSETTE.map((c) => JSON.stringify(c)).join("\n") + "\n");
  await cli("bundle", "build", project);
  archive = join(project, "..", `${project.split("/").pop()}.tar.gz`);
  await cli("bundle", "build", project, "--output", archive);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run",
    ],
  });
});

after(async () => {
  await browser?.close();
  proxy?.close();
  server?.child.kill("SIGTERM");
  if (home) await rm(home, { recursive: true, force: true });
  if (project) await rm(project, { recursive: true, force: true });
  if (archive) await rm(archive, { force: true });
});

async function sessionId() {
  const out = await cli("session", "create", "hostile");
  const line = out.split("\n").find((l) => l.startsWith("session"));
  assert.ok(line, out);
  return line.split(/\s+/)[1];
}

/** No serious or critical axe violation, and no sideways scroll at the page's width. */
async function checkPage(page, name) {
  await page.evaluate(axe.source);
  const violations = await page.evaluate(async () => {
    const result = await globalThis.axe.run(document, { resultTypes: ["violations"] });
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
  });
  assert.deepEqual(violations, [], `${name}: axe`);
  const widths = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(widths[0] <= widths[1], `${name} scrolls sideways: ${widths}`);
  if (SHOTS) {
    await mkdir(SHOTS, { recursive: true });
    await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  }
}

test("log in, stream a turn, approve and deny from the page, nothing injected runs", { timeout: 120_000 }, async () => {
  const id = await sessionId();
  const context = await browser.newContext({ viewport: { width: WIDTH, height: 900 } });
  const page = await context.newPage();
  const requests = [];
  page.on("request", (request) => requests.push(request.url()));
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));

  // The login page; a wrong token is refused, the right one lets in.
  await page.goto(`${proxy.base}/console/`);
  await page.getByLabel("Auth token").waitFor();
  await checkPage(page, "login");
  await page.getByLabel("Auth token").fill("not-the-token");
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByText("that is not this server's auth token").waitFor();
  await page.getByLabel("Auth token").fill(TOKEN);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator(`[data-session="${id}"]`).waitFor();
  assert.equal(await page.evaluate(() => document.cookie), "", "the login cookie is HttpOnly");
  assert.match(await page.locator(`[data-session="${id}"] .state`).innerText(), /idle/);
  await checkPage(page, "sessions");

  // A turn, live: its Bash call waits; allowed from the session's page, its output shows.
  await page.goto(`${proxy.base}/console/#/sessions/${id}`);
  await page.getByLabel("Prompt").fill("go");
  await page.getByRole("button", { name: "Run turn" }).click();
  const card = page.locator("section li[data-request]");
  await card.waitFor();
  assert.match(await card.locator("pre").innerText(), /printf '<b>bold<\/b>'/);
  await page.locator('[data-state="waiting_for_approval"]').waitFor();
  assert.equal(await page.locator("#badge").innerText(), "1");
  await checkPage(page, "session-waiting");
  // The connection drops mid-turn: the page follows again after the last event it drew.
  proxy.cut();
  await page.locator("ol.events[data-reconnects]").waitFor();
  await page.getByText("Following live.").waitFor();
  await card.getByRole("button", { name: "Allow once" }).click();
  await page.locator('[data-outcome="completed"]').first().waitFor();
  const shown = JSON.parse(await cli("--json", "session", "get", id));
  assert.equal(await page.locator("ol.events").getAttribute("data-last-sequence"), shown.lastSequence);
  assert.equal(await page.locator("ol.events").getAttribute("data-gap"), null, "no event missed");
  const answer = await page.locator("pre.answer").first().innerText();
  assert.ok(answer.includes(`<img src=x onerror="window.__pwned='text'">`), answer);
  assert.ok(answer.includes("\\x1b[31mred"), `escape shown: ${answer}`);
  const stdout = await page.locator("pre.stdout").first().innerText();
  assert.ok(stdout.includes(FILE_NAME), stdout);
  assert.ok(stdout.includes("<script>window.__pwned=2</script>"), stdout);
  assert.equal(await page.evaluate(() => globalThis.__pwned), undefined, "no injected script ran");
  // The policy holds even for markup that did reach the page: an inline script is refused.
  const blocked = await page.evaluate(async () => {
    const script = document.createElement("script");
    script.textContent = "globalThis.__inline = true;";
    document.body.appendChild(script);
    await new Promise((resolve) => setTimeout(resolve, 50));
    script.remove();
    return globalThis.__inline === undefined;
  });
  assert.ok(blocked, "the Content-Security-Policy refuses inline script");
  assert.equal(await page.locator("main img, main script, main b").count(), 0, "no injected element");
  await checkPage(page, "session");

  // Reloaded (the stream opened again from the start): every event once.
  const last = await page.locator("ol.events").getAttribute("data-last-sequence");
  const drawn = await page.locator("[data-sequence]").count();
  await page.reload();
  await page.locator(`ol.events[data-last-sequence="${last}"]`).waitFor();
  assert.equal(await page.locator("[data-sequence]").count(), drawn, "nothing doubled or lost");
  const sequences = await page.locator("[data-sequence]").evaluateAll((nodes) => nodes.map((n) => n.getAttribute("data-sequence")));
  assert.equal(new Set(sequences).size, sequences.length, "each event drawn once");

  // The next turn's call, denied with a reason from the approvals page: it goes live.
  await page.getByLabel("Prompt").fill("again");
  await page.getByRole("button", { name: "Run turn" }).click();
  await page.locator("section li[data-request]").waitFor();
  await page.goto(`${proxy.base}/console/#/approvals`);
  const pending = page.locator("li[data-request]");
  await pending.waitFor();
  await checkPage(page, "approvals");
  await pending.getByLabel("Reason for denying").fill("not this time");
  await pending.getByRole("button", { name: "Deny" }).click();
  await page.getByText("No pending approvals.").waitFor();
  assert.equal(await page.locator("#badge").innerText(), "");
  await page.goto(`${proxy.base}/console/#/sessions/${id}`);
  await page.getByText("not this time").first().waitFor();
  await page.locator('[data-outcome="completed"]').nth(1).waitFor();

  await page.goto(`${proxy.base}/console/#/bundles`);
  await page.getByText("local/hostile@0.1.0").waitFor();
  await page.getByText("mallory").first().waitFor();
  // An archive imported from the page, into another namespace.
  await page.getByLabel("Bundle archive (.tar.gz)").setInputFiles(archive);
  await page.getByLabel("Namespace").fill("uploaded");
  await page.getByRole("button", { name: "Import" }).click();
  await page.getByText("Imported uploaded/hostile@0.1.0.").waitFor();
  await page.getByText("uploaded/hostile@0.1.0").first().waitFor();
  await checkPage(page, "bundles");
  await page.goto(`${proxy.base}/console/#/server`);
  await page.getByText("Quarantined sessions").waitFor();
  // The store: this server's home folder, no replicas.
  await page.getByText("files", { exact: true }).waitFor();
  await checkPage(page, "server");

  const elsewhere = requests.filter((url) => !url.startsWith(proxy.base));
  assert.deepEqual(elsewhere, [], "no request leaves the server's origin");
  assert.deepEqual(errors, [], "no script error on the page");
  await context.close();
});

test("an MCP server's request for input is answered from the approvals page", { timeout: 120_000 }, async () => {
  await cli("bundle", "build", join(REPO, "bundles", "mcp-input"));
  const out = await cli("session", "create", "mcp-input");
  const id = out.split("\n").find((l) => l.startsWith("session")).split(/\s+/)[1];
  await cli("submit", id, "Plan a trip");
  const context = await browser.newContext({ viewport: { width: WIDTH, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(`${proxy.base}/console/`);
  await page.getByLabel("Auth token").fill(TOKEN);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator(`[data-session="${id}"]`).waitFor();

  await page.goto(`${proxy.base}/console/#/approvals`);
  const pending = page.locator("li[data-request]");
  await pending.waitFor();
  assert.match(await pending.locator("pre").innerText(), /Where to, and for how long\?/);
  await checkPage(page, "approvals-input");
  // An answer outside the schema: the server names the field, and the request still waits.
  await pending.getByLabel("city (required)").fill("Paris");
  await pending.getByLabel("days").fill("40");
  await pending.getByRole("button", { name: "Answer" }).click();
  await pending.getByText("answer.days").waitFor();
  await pending.getByLabel("days").fill("3");
  await pending.getByRole("button", { name: "Answer" }).click();
  await page.getByText("No pending approvals.").waitFor();
  await page.goto(`${proxy.base}/console/#/sessions/${id}`);
  await page.getByText("trip to Paris for 3 days").first().waitFor();
  await page.getByText("MCP server trip asks for input").first().waitFor();
  assert.deepEqual(errors, [], "no script error on the page");
  await context.close();
});


// Figures of the console, measured in the same browser as its test (not asserted): the
// size of the embedded assets gzipped, the first load of the page on loopback (login page,
// then the sessions page after login), and how long a session of 10,000 events takes to
// show its last event after opening. Prints one JSON object.
//
// Usage: node bench/console.mjs   (after `cd console && npm ci`; needs what the console's
// browser test needs: Debian chromium and the debug odysseyd and odyssey binaries)

import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";

import { createRequire } from "node:module";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CONSOLE = join(REPO, "console");
// The browser driver the console's test uses, from the console's own packages.
const { chromium } = createRequire(join(CONSOLE, "package.json"))("playwright-core");
const ODYSSEYD = process.env.ODYSSEYD || join(REPO, "target", "debug", "odysseyd");
const CLI = process.env.ODYSSEY_CLI || join(REPO, "target", "debug", "odyssey");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const TOKEN = randomBytes(16).toString("hex");
const EVENTS = 10_000;

const figures = {};
let gzipped = 0;
for (const name of ["index.html", "console.js", "console.css"]) {
  gzipped += gzipSync(await readFile(join(CONSOLE, "dist", name))).length;
}
figures.assets_gzipped_bytes = gzipped;

const home = await mkdtemp(join(tmpdir(), "odyssey-console-bench-"));
await chmod(home, 0o755);
const child = spawn(ODYSSEYD, [
  "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--console",
  "--home", home, "--auth-token", TOKEN, "--log-format", "json",
], { stdio: ["ignore", "ignore", "pipe"] });
const found = {};
await new Promise((ok) => {
  createInterface({ input: child.stderr }).on("line", (line) => {
    try {
      const fields = JSON.parse(line).fields ?? {};
      if (fields.message === "odysseyd serving") found.grpc = `http://${fields.addr}`;
      if (fields.message === "HTTP gateway listening") found.http = `http://${fields.addr}`;
      if (found.grpc && found.http) ok();
    } catch {}
  });
});
const cli = (...args) =>
  promisify(execFile)(CLI, ["--server", found.grpc, "--token", TOKEN, ...args]).then((r) => r.stdout);

// A bundle whose one turn streams EVENTS text deltas.
const project = await mkdtemp(join(tmpdir(), "odyssey-long-"));
await mkdir(join(project, "agents", "long"), { recursive: true });
await mkdir(join(project, "cassettes"));
await writeFile(join(project, "odyssey.bundle.yaml"), `apiVersion: odyssey.ai/bundle.v1
kind: AgentBundle
metadata: { name: long, version: 0.1.0 }
spec:
  agents: [{ id: long, spec: agents/long/agent.yaml, default: true }]
`);
await writeFile(join(project, "agents", "long", "agent.yaml"), `apiVersion: odyssey.ai/v1
kind: Agent
metadata: { name: long, version: 0.1.0 }
spec:
  kind: prompt
  prompt: Talk at length.
  model: { provider: replay, name: long }
`);
const chunks = Array.from({ length: EVENTS }, (_, i) => `word${i} `);
await writeFile(join(project, "cassettes", "long.jsonl"), JSON.stringify({ text: chunks }) + "\n");
await cli("bundle", "build", project);
const session = (await cli("session", "create", "long")).split("\n").find((l) => l.startsWith("session")).split(/\s+/)[1];
await cli("run", session, "go");
const last = JSON.parse(await cli("--json", "session", "get", session)).lastSequence;
figures.session_events = Number(last);

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run"],
});
try {
  const page = await (await browser.newContext()).newPage();
  let start = Date.now();
  await page.goto(`${found.http}/console/`);
  await page.getByLabel("Auth token").waitFor();
  figures.first_load_login_ms = Date.now() - start;
  // The browser's own account of that load: from the request to the load event.
  figures.first_load_navigation_timing_ms = Math.round(
    await page.evaluate(() => performance.getEntriesByType("navigation")[0].loadEventEnd),
  );
  await page.getByLabel("Auth token").fill(TOKEN);
  start = Date.now();
  await page.getByRole("button", { name: "Log in" }).click();
  await page.locator(`[data-session="${session}"]`).waitFor();
  figures.login_to_sessions_ms = Date.now() - start;
  start = Date.now();
  await page.goto(`${found.http}/console/#/sessions/${session}`);
  await page.locator(`ol.events[data-last-sequence="${last}"]`).waitFor({ timeout: 120_000 });
  figures.session_10k_events_last_shown_ms = Date.now() - start;
} finally {
  await browser.close();
  child.kill("SIGTERM");
  await rm(home, { recursive: true, force: true });
  await rm(project, { recursive: true, force: true });
}
console.log(JSON.stringify(figures));

// An agent's MCP servers as InspectBundle and ListAgents show them, and the tools of a
// session as ListSessionTools lists them: the server starts the agent's stdio MCP server
// (bundles/mcp-tools, clock.py) in the session's sandbox cell.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { OdysseyClient } from "../src/index.js";
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

test("agents show their MCP servers and sessions list their tools", async () => {
  await client.installBundle(join(REPO, "bundles", "mcp-tools"));
  const inspected = await client.inspectBundle("mcp-tools");
  assert.deepEqual(
    inspected.agents[0].mcpServers.map((s) => [s.name, s.kind, s.operator]),
    [
      ["clock", "stdio", false],
      ["missing", "stdio", false],
    ],
  );
  const agents = await client.listAgents("mcp-tools");
  assert.deepEqual(
    agents[0].mcpServers.map((s) => s.name),
    ["clock", "missing"],
  );

  const session = await client.createSession("mcp-tools");
  const listed = await client.listSessionTools(session.id);
  // LS is denied outright, so it is not offered; sorted by name.
  assert.deepEqual(
    listed.tools.map((t) => t.name),
    ["Read", "mcp__clock__now"],
  );
  const [read, now] = listed.tools;
  assert.deepEqual([read.source, read.mcpServer], ["builtin", ""]);
  assert.deepEqual([now.source, now.mcpServer], ["mcp", "clock"]);
  assert.equal(JSON.parse(now.inputSchemaJson).type, "object");
  assert.deepEqual(
    listed.mcpServerErrors.map((e) => e.server),
    ["missing"],
  );
  assert.ok(listed.mcpServerErrors[0].error.length > 0);
});

// An agent's remote A2A agents as ListAgents shows them: the bundle's with its URL, the
// operator's (not configured on this server) without one.
test("agents show their remote A2A agents", async () => {
  await client.installBundle(join(REPO, "bundles", "a2a-delegate"));
  const agents = await client.listAgents("a2a-delegate");
  assert.deepEqual(
    agents[0].a2aAgents.map((a) => [a.name, a.url, a.operator]),
    [
      ["helper", "https://agents.example.com/helper", false],
      ["research", "", true],
    ],
  );
});

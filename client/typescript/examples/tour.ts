// Installs the demo bundle, runs its tour turn and approves the command it asks to run:
//
//   cd client/typescript && npm run example    # with odysseyd running
//
// ODYSSEY_ADDRESS (default 127.0.0.1:8472) and ODYSSEY_AUTH_TOKEN say where and how to
// connect.

import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { OdysseyClient, OdysseyError } from "../src/index.js";

// Compiled to client/typescript/build-test/examples/tour.js.
const demo = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../bundles/demo");

const client = OdysseyClient.connect({
  address: process.env.ODYSSEY_ADDRESS ?? "127.0.0.1:8472",
  token: process.env.ODYSSEY_AUTH_TOKEN,
});
await client.installBundle(demo);
const session = await client.createSession("demo");
const turn = await client.streamTurn(session.id, "Give me a tour");
for await (const event of turn) {
  switch (event.payload.case) {
    case "agentMessageDelta":
      process.stdout.write(event.payload.value.delta);
      break;
    case "permissionRequested":
      console.log(`\n[approving: ${event.payload.value.display}]`);
      await client.approve(event.payload.value.requestId);
      break;
  }
}
console.log(`\n[turn ${turn.executionId} ended at sequence ${turn.lastSequence}]`);

try {
  await client.getSession("00000000-0000-0000-0000-000000000000");
} catch (error) {
  if (error instanceof OdysseyError) {
    console.log(`[an unknown session is ${error.codeName}]`);
  }
}

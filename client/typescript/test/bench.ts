// Events per second one subscriber receives: the SDK's EventStream beside the bare
// generated Connect client, replaying the same stored events from one real odysseyd.
//
//   npm run bench      (ODYSSEYD as for the tests; not part of npm test)

import { join } from "node:path";

import { ApprovalPolicy, OdysseyClient } from "../src/index.js";
import { REPO, TOKEN, startServer } from "./server.js";

const TURNS = Number(process.argv[2] ?? 1500);

const server = await startServer();
try {
  const client = OdysseyClient.connect({ address: server.address, token: TOKEN });
  await client.installBundle(join(REPO, "bundles", "demo"));
  const session = await client.createSession("demo", { approvalPolicy: ApprovalPolicy.NEVER });
  for (let i = 0; i < TURNS; i += 1) {
    await client.run(session.id, "Give me a tour");
  }
  const last = (await client.getSession(session.id)).lastSequence;

  const bare = async (): Promise<number> => {
    const abort = new AbortController();
    let count = 0;
    try {
      for await (const item of client.sessions.subscribeSession(
        { sessionId: session.id },
        { signal: abort.signal },
      )) {
        if (item.item.case === "event") {
          count += 1;
          if (item.item.value.sequence === last) {
            abort.abort();
          }
        }
      }
    } catch {
      // the abort above
    }
    return count;
  };
  const helper = async (): Promise<number> => {
    let count = 0;
    for await (const event of client.events(session.id)) {
      count += 1;
      if (event.sequence === last) {
        break;
      }
    }
    return count;
  };
  for (const [name, run] of [["bare client", bare], ["EventStream", helper]] as const) {
    let best = 0;
    let count = 0;
    for (let i = 0; i < 3; i += 1) {
      const started = performance.now();
      count = await run();
      best = Math.max(best, count / ((performance.now() - started) / 1000));
    }
    console.log(`typescript ${name.padEnd(12)} ${count} events  ${best.toFixed(0).padStart(10)} events/s`);
  }
  client.close();
} finally {
  await server.stop();
}

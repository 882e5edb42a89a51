// The server: GetServerInfo (version, limits, sandbox, store, activity, quarantined sessions).

import { SandboxMode } from "@odyssey-ai/client/web";

import { client, describe } from "../api.js";
import { append, clear, el, fields, say } from "../dom.js";
import { label, when } from "../format.js";
import type { Page } from "../router.js";
import { visible } from "../visible.js";

const yes = (b: boolean | undefined) => (b ? "yes" : "no");

export function serverPage(main: HTMLElement): Page {
  const status = el("p", { class: "status", role: "status" });
  const body = el("div");
  clear(main);
  append(main, el("h1", {}, "Server"), status, body);
  void client
    .serverInfo()
    .then((info) => {
      const l = info.limits;
      const s = info.sandbox;
      const a = info.activity;
      append(
        body,
        fields([
          ["Version", info.version],
          ["Started", when(info.startedAt)],
          ["Providers", info.providers.join(", ")],
        ]),
        el("h2", {}, "Limits"),
        fields([
          ["Workers", `${l?.running ?? 0} running of ${l?.workerCount ?? 0}`],
          ["Queue", `${l?.queued ?? 0} queued of ${l?.queueCapacity ?? 0}`],
          ["Largest request", `${l?.maxRequestBytes ?? 0} bytes`],
          ["Largest archive", `${l?.maxArchiveBytes ?? 0} bytes`],
          ["Steps per turn", String(l?.maxTurnSteps ?? 0)],
          ["Turn duration", `${l?.maxTurnDurationMs ?? 0} ms`],
        ]),
        el("h2", {}, "Sandbox"),
        fields([
          ["bubblewrap", yes(s?.bubblewrap)],
          ["Landlock", yes(s?.landlock)],
          ["seccomp", yes(s?.seccomp)],
          ["Forced mode", s?.forcedMode ? label(SandboxMode[s.forcedMode], "") : "none"],
          ["Full access allowed", yes(s?.dangerFullAccessAllowed)],
        ]),
        el("h2", {}, "Store"),
        fields([
          ["Kind", info.store?.kind ?? ""],
          ...(info.store?.replicaId
            ? ([
                ["Replica", info.store.replicaId],
                [
                  "Replicas",
                  info.store.replicas
                    .map((r) => (r.alive ? `${r.id} alive` : `${r.id} dead (last seen ${when(r.lastSeen)})`))
                    .join(", ") || "none seen",
                ],
              ] as [string, string][])
            : []),
        ]),
        el("h2", {}, "Activity"),
        fields([
          ["Tasks", String(a?.tasks ?? 0)],
          ["Open sessions", String(a?.openSessions ?? 0)],
          ["Subscriptions", String(a?.subscriptions ?? 0)],
        ]),
        el("h2", {}, "Quarantined sessions"),
        info.quarantinedSessions.length === 0
          ? el("p", {}, "None.")
          : el(
              "ul",
              {},
              ...info.quarantinedSessions.map((q) =>
                el("li", {}, el("code", {}, q.sessionId), ` — ${visible(q.reason, true)} (${when(q.quarantinedAt)})`),
              ),
            ),
      );
      say(status, "");
    })
    .catch((error: unknown) => say(status, describe(error), "bad"));
  return { close: () => {} };
}

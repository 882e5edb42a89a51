// Sessions, newest first, a page at a time, filtered by bundle and agent: each with its
// state, last activity, token usage and how many of its calls wait for a decision.

import { SessionState, type Session } from "@odyssey-ai/client/web";

import { approvals, client, describe } from "../api.js";
import { append, clear, el, say } from "../dom.js";
import { label, usage, when } from "../format.js";
import type { Page } from "../router.js";

const PAGE_SIZE = 20;

export function sessionsPage(main: HTMLElement, query: URLSearchParams): Page {
  const bundle = query.get("bundle") ?? "";
  const agent = query.get("agent") ?? "";
  const bundleInput = el("input", { id: "filter-bundle", name: "bundle", value: bundle, autocomplete: "off" });
  const agentInput = el("input", { id: "filter-agent", name: "agent", value: agent, autocomplete: "off" });
  const form = el(
    "form",
    { class: "inline", role: "search", "aria-label": "Filter sessions" },
    el("div", { class: "field" }, el("label", { for: "filter-bundle" }, "Bundle"), bundleInput),
    el("div", { class: "field" }, el("label", { for: "filter-agent" }, "Agent"), agentInput),
    el("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (bundleInput.value.trim()) next.set("bundle", bundleInput.value.trim());
    if (agentInput.value.trim()) next.set("agent", agentInput.value.trim());
    location.hash = `#/sessions${next.size ? `?${next}` : ""}`;
  });
  const status = el("p", { class: "status", role: "status" });
  const list = el("ul", { class: "cards", "aria-label": "Sessions" });
  const pager = el("div", { class: "row" });
  clear(main);
  append(main, el("h1", {}, "Sessions"), form, status, list, pager);

  // The tokens of the pages before this one, to go back.
  const previous: string[] = [];
  let current = "";
  let shown: Session[] = [];

  let signature = "";
  const render = () => {
    // Redrawn only when something shown changed, so keyboard focus stays put.
    const next = JSON.stringify(
      shown.map((s) => [s.id, s.state, String(s.turnCount), String(s.updatedAt?.seconds), approvals.of(s.id).length]),
    );
    if (next === signature) return;
    signature = next;
    clear(list);
    for (const s of shown) {
      const waiting = approvals.of(s.id).length;
      const state = label(SessionState[s.state], "");
      const ref = s.bundle ? `${s.bundle.namespace}/${s.bundle.name}@${s.bundle.version}` : s.bundleReference;
      append(
        list,
        el(
          "li",
          { "data-session": s.id },
          el("a", { href: `#/sessions/${encodeURIComponent(s.id)}` }, s.id),
          el(
            "div",
            {},
            `${ref} · agent ${s.agentId} · `,
            el("span", { class: `state state-${state}` }, state),
            waiting > 0 ? " " : null,
            waiting > 0
              ? el("span", { class: "badge", "aria-label": `${waiting} pending approvals` }, String(waiting))
              : null,
          ),
          el(
            "div",
            { class: "meta" },
            `last activity ${when(s.updatedAt)} · ${s.turnCount} turns · tokens ${usage(s.usage)}`,
          ),
        ),
      );
    }
  };

  const load = async (token: string) => {
    say(status, "Loading sessions…");
    try {
      const page = await client.sessions.listSessions({
        pageSize: PAGE_SIZE,
        pageToken: token,
        bundle,
        agentId: agent,
      });
      shown = page.sessions;
      current = token;
      render();
      say(status, shown.length === 0 ? "No sessions." : `${shown.length} sessions on this page.`);
      clear(pager);
      if (previous.length > 0) {
        const back = el("button", { type: "button", class: "secondary" }, "Previous page");
        back.addEventListener("click", () => void load(previous.pop() ?? ""));
        append(pager, back);
      }
      if (page.nextPageToken) {
        const next = el("button", { type: "button", class: "secondary" }, "Next page");
        next.addEventListener("click", () => {
          previous.push(current);
          void load(page.nextPageToken);
        });
        append(pager, next);
      }
    } catch (error) {
      say(status, describe(error), "bad");
    }
  };
  void load("");
  const unlisten = approvals.listen(render);
  // States change as turns run: refresh the page shown every few seconds.
  const timer = setInterval(() => void load(current), 5000);
  return {
    close: () => {
      unlisten();
      clearInterval(timer);
    },
  };
}

// Every pending approval, live (WatchApprovals): the exact call as the server's display
// form shows it, the rule that asked, and the three answers. A decision made anywhere
// removes it from the page.

import { ApprovalKind, type Approval } from "@odyssey-ai/client/web";

import { approvals, client, describe } from "../api.js";
import { append, clear, el, fields, say } from "../dom.js";
import { when } from "../format.js";
import type { Page } from "../router.js";
import { visible } from "../visible.js";

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * An MCP server's request for input: its message, one field per property of the requested
 * schema, and the three answers (the server checks the answer against the schema and names
 * the field it refuses).
 */
function inputCard(a: Approval): HTMLLIElement {
  const status = el("p", { class: "status", role: "status" });
  const schema = (a.requestedSchema ?? {}) as { [key: string]: Json };
  const properties = (schema.properties ?? {}) as { [key: string]: { [key: string]: Json } };
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const inputs: [string, { [key: string]: Json }, HTMLInputElement | HTMLSelectElement][] = [];
  const rows = Object.entries(properties).map(([name, property]) => {
    const id = `input-${a.requestId}-${name}`;
    const choices = Array.isArray(property.enum) ? property.enum.map(String) : [];
    let input: HTMLInputElement | HTMLSelectElement;
    if (property.type === "boolean") {
      input = el("input", { id, type: "checkbox" });
    } else if (choices.length > 0) {
      input = el("select", { id }, el("option", { value: "" }, "—"),
        ...choices.map((c) => el("option", { value: c }, visible(c, true))));
    } else {
      input = el("input", { id, autocomplete: "off", type: "text" });
    }
    inputs.push([name, property, input]);
    const label = `${visible(name, true)}${required.has(name) ? " (required)" : ""}`;
    const hint = typeof property.description === "string" ? visible(property.description, true) : "";
    return el("div", { class: "field" }, el("label", { for: id }, label), input, hint ? el("small", {}, hint) : null);
  });
  const send = el("button", { type: "submit" }, "Answer");
  const decline = el("button", { type: "button", class: "danger" }, "Decline");
  const cancel = el("button", { type: "button", class: "secondary" }, "Cancel");
  const buttons = [send, decline, cancel];
  const form = el("form", { "aria-label": `Answer ${a.tool}` }, ...rows, el("div", { class: "row" }, send, decline, cancel));
  const respond = (action: () => Promise<unknown>, done: string) => {
    for (const b of buttons) b.disabled = true;
    action()
      .then(() => say(status, done, "ok"))
      .catch((error: unknown) => {
        say(status, describe(error), "bad");
        for (const b of buttons) b.disabled = false;
      });
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const answer: { [key: string]: Json } = {};
    for (const [name, property, input] of inputs) {
      if (input instanceof HTMLInputElement && input.type === "checkbox") {
        answer[name] = input.checked;
        continue;
      }
      const text = input.value.trim();
      if (text === "") continue;
      if (property.type === "integer" || property.type === "number") answer[name] = Number(text);
      else if (property.type === "array") answer[name] = text.split(",").map((t) => t.trim()).filter((t) => t);
      else answer[name] = text;
    }
    respond(() => client.answer(a.requestId, answer), "Answered.");
  });
  decline.addEventListener("click", () => respond(() => client.decline(a.requestId), "Declined."));
  cancel.addEventListener("click", () => respond(() => client.decline(a.requestId, { cancel: true }), "Cancelled."));
  return el(
    "li",
    { "data-request": a.requestId },
    el("h3", {}, el("code", {}, visible(a.tool, true)), " asks for input, in session ",
      el("a", { href: `#/sessions/${encodeURIComponent(a.sessionId)}` }, a.sessionId)),
    // The server's message with control characters already shown as escapes.
    el("pre", { "aria-label": "The question" }, a.display || a.message),
    fields([
      ["Asked by", visible(a.summary, true)],
      ["Requested", when(a.requestedAt)],
      ["Expires", when(a.expiresAt)],
    ]),
    form,
    status,
  );
}

/** One pending request with its answers. Used here and on its session's page. */
export function approvalCard(a: Approval): HTMLLIElement {
  if (a.kind === ApprovalKind.INPUT) return inputCard(a);
  const status = el("p", { class: "status", role: "status" });
  const reasonId = `deny-reason-${a.requestId}`;
  const reason = el("input", { id: reasonId, name: "reason", autocomplete: "off" });
  const once = el("button", { type: "button" }, "Allow once");
  const always = el("button", { type: "button", class: "secondary" }, "Allow always");
  const deny = el("button", { type: "submit", class: "danger" }, "Deny");
  const denyForm = el(
    "form",
    { class: "inline", "aria-label": `Deny ${a.tool} call` },
    el("div", { class: "field" }, el("label", { for: reasonId }, "Reason for denying"), reason),
    deny,
  );
  const buttons = [once, always, deny];
  const answer = (action: () => Promise<void>, done: string) => {
    for (const b of buttons) b.disabled = true;
    action()
      .then(() => say(status, done, "ok"))
      .catch((error: unknown) => {
        say(status, describe(error), "bad");
        for (const b of buttons) b.disabled = false;
      });
  };
  once.addEventListener("click", () => answer(() => client.approve(a.requestId), "Allowed once."));
  always.addEventListener("click", () =>
    answer(() => client.approve(a.requestId, { always: true }), "Allowed for the rest of the session."),
  );
  denyForm.addEventListener("submit", (event) => {
    event.preventDefault();
    answer(() => client.deny(a.requestId, reason.value), "Denied.");
  });
  return el(
    "li",
    { "data-request": a.requestId },
    el("h3", {}, el("code", {}, visible(a.tool, true)), " in session ",
      el("a", { href: `#/sessions/${encodeURIComponent(a.sessionId)}` }, a.sessionId)),
    // The server's display form: control characters already shown as escapes.
    el("pre", { "aria-label": "The call" }, a.display || a.summary),
    a.controlCharacters
      ? el("p", { class: "controls-note" }, "Contains control characters, shown as escapes: a terminal would not draw what runs.")
      : null,
    fields([
      ["Why it asks", visible(a.reason, true) || "—"],
      ["Requested", when(a.requestedAt)],
      ["Expires", when(a.expiresAt)],
    ]),
    el("div", { class: "row" }, once, always),
    denyForm,
    status,
  );
}

export function approvalsPage(main: HTMLElement): Page {
  const status = el("p", { class: "status", role: "status" });
  const list = el("ul", { class: "cards", "aria-label": "Pending approvals" });
  clear(main);
  append(main, el("h1", {}, "Approvals"), status, list);
  const render = () => {
    // Cards of requests still pending stay as they are (a half-typed reason survives);
    // ended ones go, new ones come in order.
    const wanted = new Set(approvals.pending.map((a) => a.requestId));
    for (const item of Array.from(list.children)) {
      if (!wanted.has((item as HTMLElement).dataset.request ?? "")) item.remove();
    }
    const have = new Set(Array.from(list.children).map((i) => (i as HTMLElement).dataset.request));
    for (const a of approvals.pending) {
      if (!have.has(a.requestId)) append(list, approvalCard(a));
    }
    say(status, approvals.pending.length === 0 ? "No pending approvals." : `${approvals.pending.length} pending.`);
  };
  render();
  const unlisten = approvals.listen(render);
  return { close: unlisten };
}

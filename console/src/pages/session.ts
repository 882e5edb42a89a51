// One session: its events as a person reads a turn (the prompt, streamed text, reasoning
// folded, tool calls with their arguments, output and result, approvals, plan, usage),
// live; after a dropped stream it resubscribes after the last sequence shown, so nothing
// is missed or shown twice. A prompt box runs a turn; Cancel stops the running one.

import {
  ApprovalDecision,
  HumanInputAction,
  OutputStream,
  PlanStepStatus,
  SessionState,
  TurnOutcome,
  type SessionEvent,
} from "@odyssey-ai/client/web";

import { approvals, client, describe, isUnauthenticated } from "../api.js";
import { append, clear, el, fields, say } from "../dom.js";
import { label, usage, when } from "../format.js";
import type { Page } from "../router.js";
import { hasControls, visible } from "../visible.js";
import { approvalCard } from "./approvals.js";

/** Where the events of one turn are drawn. */
interface TurnView {
  item: HTMLLIElement;
  body: HTMLElement;
  text?: HTMLPreElement;
  reasoning?: HTMLPreElement;
  tools: Map<string, ToolView>;
  execs: Map<string, ToolView>;
}

interface ToolView {
  item: HTMLElement;
  stdout?: HTMLPreElement;
  stderr?: HTMLPreElement;
}

/** Untrusted text as a block, control characters shown as escapes and flagged. */
function textBlock(text: string, className = ""): HTMLPreElement {
  const block = el("pre", { class: className }, visible(text));
  if (hasControls(text)) block.setAttribute("data-controls", "");
  return block;
}

/**
 * Appends streamed text to a block as a text node of its own: appending to one growing
 * string would copy it whole for every delta (a long answer is thousands of them).
 */
function grow(block: HTMLElement, delta: string): void {
  block.appendChild(document.createTextNode(visible(delta)));
  if (hasControls(delta)) block.setAttribute("data-controls", "");
}

function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? "";
  } catch {
    return String(value);
  }
}

export function sessionPage(main: HTMLElement, sessionId: string): Page {
  const header = el("div");
  const pending = el("section", { "aria-labelledby": "pending-title" });
  const status = el("p", { class: "status", role: "status" });
  const events = el("ol", { class: "events", "aria-label": "Events", "aria-live": "off" });
  const prompt = el("textarea", { id: "prompt", name: "prompt", rows: "3" });
  const run = el("button", { type: "submit" }, "Run turn");
  const cancel = el("button", { type: "button", class: "danger", disabled: true }, "Cancel turn");
  const form = el(
    "form",
    { "aria-label": "Run a turn" },
    el("label", { for: "prompt" }, "Prompt"),
    prompt,
    el("div", { class: "row" }, run, cancel),
  );
  clear(main);
  append(
    main,
    el("h1", {}, "Session ", el("code", {}, sessionId)),
    header,
    pending,
    form,
    el("h2", {}, "Events"),
    status,
    events,
  );

  let closed = false;
  let lastSequence = 0n;
  let reconnects = 0;
  let runningTurn = "";
  const turns = new Map<string, TurnView>();
  // Where each approval request was drawn, for its decision.
  const requests = new Map<string, HTMLElement>();
  let stream: ReturnType<typeof client.events> | undefined;

  const refreshHeader = async () => {
    try {
      const s = await client.getSession(sessionId);
      const state = label(SessionState[s.state], "");
      clear(header);
      append(
        header,
        fields([
          ["Bundle", s.bundle ? `${s.bundle.namespace}/${s.bundle.name}@${s.bundle.version}` : s.bundleReference],
          ["Agent", s.agentId],
          ...(s.parentSessionId
            ? [["Parent", el("a", { href: `#/sessions/${encodeURIComponent(s.parentSessionId)}` }, s.parentSessionId)] as [string, HTMLElement]]
            : []),
          ["Model", s.model ? `${s.model.provider}/${s.model.name}` : "—"],
          ["State", el("span", { class: `state state-${state}`, "data-state": state }, state)],
          ["Turns", String(s.turnCount)],
          ["Tokens", usage(s.usage)],
          ["Last activity", when(s.updatedAt)],
        ]),
      );
    } catch (error) {
      say(status, describe(error), "bad");
    }
  };

  const renderPending = () => {
    clear(pending);
    const mine = approvals.of(sessionId);
    if (mine.length === 0) return;
    append(pending, el("h2", { id: "pending-title" }, `Waiting for a decision (${mine.length})`));
    const list = el("ul", { class: "cards" });
    for (const a of mine) append(list, approvalCard(a));
    append(pending, list);
  };

  const turnView = (event: SessionEvent): TurnView => {
    const id = event.turnId || "outside";
    let view = turns.get(id);
    if (!view) {
      const body = el("div");
      const item = el("li", { class: "turn", "data-turn": id }, body);
      view = { item, body, tools: new Map(), execs: new Map() };
      turns.set(id, view);
      append(events, item);
    }
    return view;
  };

  const line = (view: TurnView, event: SessionEvent, ...children: Array<Node | string | null>) => {
    const node = el("div", { "data-sequence": String(event.sequence) }, ...children);
    append(view.body, node);
    // Text deltas start a new block after anything else.
    view.text = undefined;
    view.reasoning = undefined;
    return node;
  };

  const draw = (event: SessionEvent) => {
    const view = turnView(event);
    const p = event.payload;
    switch (p.case) {
      case "turnStarted":
        runningTurn = event.turnId;
        cancel.disabled = false;
        line(view, event, el("h3", {}, "Prompt"), textBlock(p.value.prompt));
        break;
      case "agentMessageDelta": {
        if (!view.text) {
          const text = textBlock("", "answer");
          line(view, event, text);
          view.text = text;
        }
        grow(view.text, p.value.delta);
        view.text.setAttribute("data-sequence", String(event.sequence));
        break;
      }
      case "reasoningDelta": {
        if (!view.reasoning) {
          const reasoning = textBlock("");
          line(view, event, el("details", {}, el("summary", {}, "Reasoning"), reasoning));
          view.reasoning = reasoning;
        }
        grow(view.reasoning, p.value.delta);
        break;
      }
      case "reasoningSectionBreak":
        view.reasoning = undefined;
        break;
      case "toolCallStarted": {
        const item = line(
          view,
          event,
          el("h3", {}, "Tool call ", el("code", {}, visible(p.value.tool, true))),
          textBlock(json(p.value.arguments)),
        );
        item.className = "tool";
        view.tools.set(p.value.callId, { item });
        break;
      }
      case "execCommandBegin": {
        const tool = view.tools.get(p.value.callId);
        const target = tool ?? { item: line(view, event) };
        append(target.item, el("div", { class: "meta" }, `$ ${visible(p.value.argv.join(" "), true)}`));
        view.execs.set(p.value.execId, target);
        break;
      }
      case "execCommandOutputDelta": {
        const target = view.execs.get(p.value.execId);
        if (!target) break;
        const stderr = p.value.stream === OutputStream.STDERR;
        let block = stderr ? target.stderr : target.stdout;
        if (!block) {
          block = textBlock("", stderr ? "stderr" : "stdout");
          block.setAttribute("aria-label", stderr ? "standard error" : "standard output");
          append(target.item, block);
          if (stderr) target.stderr = block;
          else target.stdout = block;
        }
        grow(block, p.value.text);
        break;
      }
      case "execCommandEnd": {
        const target = view.execs.get(p.value.execId);
        const text = `exit ${p.value.exitCode} · ${p.value.durationMs} ms${p.value.timedOut ? " · timed out" : ""}${p.value.outputTruncated ? " · output cut" : ""}`;
        append(target?.item ?? line(view, event), el("div", { class: p.value.exitCode === 0 ? "meta ok" : "meta bad" }, text));
        break;
      }
      case "toolCallFinished": {
        const target = view.tools.get(p.value.callId)?.item ?? line(view, event);
        append(
          target,
          el("div", { class: p.value.success ? "ok" : "bad" }, p.value.success ? "Result" : "Failed"),
          textBlock(p.value.result),
        );
        view.text = undefined;
        break;
      }
      case "permissionRequested": {
        // Drawn inside its tool call, before the command's output and result.
        const tool = view.tools.get(p.value.callId);
        const nodes = [
          el("h4", {}, "Asks for approval"),
          textBlock(p.value.display || p.value.summary),
          p.value.controlCharacters ? el("p", { class: "controls-note" }, "Contains control characters, shown as escapes.") : null,
          el("p", { class: "meta" }, visible(p.value.reason, true)),
        ];
        const target = tool?.item ?? line(view, event);
        append(target, ...nodes);
        requests.set(p.value.requestId, target);
        break;
      }
      case "approvalResolved": {
        const how = label(ApprovalDecision[p.value.decision], "").replace(/_/g, " ");
        const text = `Decision: ${how}${p.value.reason ? ` — ${visible(p.value.reason, true)}` : ""}`;
        append(requests.get(p.value.requestId) ?? line(view, event), el("p", { class: "meta" }, text));
        break;
      }
      case "humanInputRequested": {
        // An MCP server's question, drawn inside the tool call during which it asked.
        const tool = view.tools.get(p.value.callId);
        const target = tool?.item ?? line(view, event);
        append(
          target,
          el("h4", {}, `MCP server ${visible(p.value.server, true)} asks for input`),
          textBlock(p.value.display || p.value.message),
        );
        requests.set(p.value.requestId, target);
        break;
      }
      case "humanInputAnswered": {
        const how = label(HumanInputAction[p.value.action], "").replace(/_/g, " ");
        const text = `Answer: ${how}${p.value.reason ? ` — ${visible(p.value.reason, true)}` : ""}`;
        append(requests.get(p.value.requestId) ?? line(view, event), el("p", { class: "meta" }, text));
        break;
      }
      case "planUpdated": {
        const list = el("ol");
        for (const step of p.value.steps) {
          append(list, el("li", {}, `[${label(PlanStepStatus[step.status], "").replace(/_/g, " ")}] ${visible(step.text, true)}`));
        }
        line(view, event, el("h3", {}, "Plan"), list);
        break;
      }
      case "tokenUsageReported":
        line(view, event, el("p", { class: "meta" }, `Tokens: ${usage(p.value.turnTotal)}`));
        break;
      case "errorOccurred":
        view.item.classList.add("error");
        line(view, event, el("p", { class: "bad" }, `${p.value.fatal ? "Error" : "Warning"} ${visible(p.value.code, true)}: ${visible(p.value.message)}`));
        break;
      case "turnCompleted": {
        const outcome = label(TurnOutcome[p.value.outcome], "");
        line(
          view,
          event,
          el("p", { class: outcome === "completed" ? "ok" : "bad", "data-outcome": outcome }, `Turn ${outcome} · tokens ${usage(p.value.usage)}`),
          p.value.error ? textBlock(p.value.error) : null,
        );
        if (runningTurn === event.turnId) {
          runningTurn = "";
          cancel.disabled = true;
        }
        void refreshHeader();
        break;
      }
      case "historyCompacted":
        line(view, event, el("p", { class: "meta" }, `Earlier turns summarized (${p.value.turnsCompacted})`));
        break;
      case "memoryRecalled":
        line(view, event, el("p", { class: "meta" }, `Memory recalled (${p.value.records} records)`));
        break;
      case "networkConnectionAttempted":
        line(view, event, el("p", { class: "meta" }, `Network: ${visible(p.value.host, true)}:${p.value.port}`));
        break;
      case "subagentStarted":
        line(
          view,
          event,
          el(
            "p",
            { class: "meta" },
            `Sub-agent ${visible(p.value.agentId, true)} (${visible(p.value.workspace, true)} workspace): `,
            el("a", { href: `#/sessions/${encodeURIComponent(p.value.childSessionId)}` }, p.value.childSessionId),
          ),
        );
        break;
      case "subagentFinished": {
        const outcome = label(TurnOutcome[p.value.outcome], "");
        line(
          view,
          event,
          el(
            "p",
            { class: outcome === "completed" ? "ok" : "bad" },
            `Sub-agent ${visible(p.value.agentId, true)} ${outcome} · tokens ${usage(p.value.usage)}`,
          ),
          p.value.error ? textBlock(p.value.error) : null,
        );
        break;
      }
      default:
        break;
    }
  };

  const follow = async () => {
    while (!closed) {
      stream = client.events(sessionId, { afterSequence: lastSequence });
      try {
        say(status, "Following live.");
        for await (const event of stream) {
          // The SDK hands each sequence out once, but a resubscription from here must not
          // draw one twice either.
          if (event.sequence <= lastSequence) continue;
          if (event.sequence !== lastSequence + 1n) {
            // Never expected: the log has no gaps and the stream resumes after the last
            // event drawn. Marked so that a test (or a person) sees it.
            events.setAttribute("data-gap", `${lastSequence}..${event.sequence}`);
          }
          lastSequence = event.sequence;
          events.setAttribute("data-last-sequence", String(lastSequence));
          draw(event);
        }
        if (closed) return;
      } catch (error) {
        if (closed) return;
        say(status, `Disconnected (${describe(error)}); reconnecting after event ${lastSequence}…`, "bad");
        if (isUnauthenticated(error)) return;
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
      reconnects += 1;
      events.setAttribute("data-reconnects", String(reconnects));
    }
  };

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = prompt.value.trim();
    if (!text) {
      say(status, "Write a prompt first.", "bad");
      prompt.focus();
      return;
    }
    run.disabled = true;
    client
      .submit(sessionId, text)
      .then(() => {
        prompt.value = "";
        say(status, "Turn submitted.", "ok");
      })
      .catch((error: unknown) => say(status, describe(error), "bad"))
      .finally(() => {
        run.disabled = false;
      });
  });
  cancel.addEventListener("click", () => {
    if (!runningTurn) return;
    client
      .cancel(runningTurn)
      .then(() => say(status, "Turn cancelled.", "ok"))
      .catch((error: unknown) => say(status, describe(error), "bad"));
  });

  void refreshHeader();
  renderPending();
  const unlisten = approvals.listen(() => {
    renderPending();
    void refreshHeader();
  });
  void follow();
  return {
    close: () => {
      closed = true;
      unlisten();
      stream?.close();
    },
  };
}

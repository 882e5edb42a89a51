// The Odyssey console: a page per hash route (#/sessions, #/sessions/ID, #/approvals,
// #/bundles, #/server), a login form when the server wants its token, and the badge of
// pending approvals kept live for every page.

import { approvals, client, describe, isUnauthenticated, login, logout } from "./api.js";
import { append, clear, el, say } from "./dom.js";
import { approvalsPage } from "./pages/approvals.js";
import { bundlesPage } from "./pages/bundles.js";
import { serverPage } from "./pages/server.js";
import { sessionPage } from "./pages/session.js";
import { sessionsPage } from "./pages/sessions.js";
import type { Page } from "./router.js";

const main = document.getElementById("main") as HTMLElement;
const badge = document.getElementById("badge") as HTMLElement;
const logoutButton = document.getElementById("logout") as HTMLButtonElement;
let current: Page | undefined;

function route(): void {
  current?.close();
  const hash = location.hash.replace(/^#/, "") || "/sessions";
  const [path, search = ""] = hash.split("?");
  const query = new URLSearchParams(search);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  for (const link of Array.from(document.querySelectorAll("nav a"))) {
    const target = (link.getAttribute("href") ?? "").replace(/^#/, "");
    if (`/${parts[0] ?? ""}` === target) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (parts[0] === "sessions" && parts[1]) {
    current = sessionPage(main, parts[1]);
  } else if (parts[0] === "approvals") {
    current = approvalsPage(main);
  } else if (parts[0] === "bundles") {
    current = bundlesPage(main);
  } else if (parts[0] === "server") {
    current = serverPage(main);
  } else {
    current = sessionsPage(main, query);
  }
  document.title = `${main.querySelector("h1")?.textContent ?? "Console"} · Odyssey`;
}

function showLogin(message = ""): void {
  current?.close();
  current = undefined;
  approvals.stop();
  logoutButton.hidden = true;
  const token = el("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "current-password",
    required: true,
  });
  const status = el("p", { class: "status", role: "status" });
  const form = el(
    "form",
    { "aria-label": "Log in" },
    el("label", { for: "token" }, "Auth token"),
    token,
    el("div", { class: "row" }, el("button", { type: "submit" }, "Log in")),
    status,
  );
  if (message) say(status, message, "bad");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    say(status, "Logging in…");
    login(token.value)
      .then((problem) => {
        token.value = "";
        if (problem) {
          say(status, problem, "bad");
          token.focus();
        } else {
          void start();
        }
      })
      .catch((error: unknown) => say(status, describe(error), "bad"));
  });
  clear(main);
  append(
    main,
    el("h1", {}, "Log in"),
    el("p", {}, "Give this server's auth token once; the console keeps a login cookie, never the token."),
    form,
  );
  document.title = "Log in · Odyssey";
  token.focus();
}

async function start(): Promise<void> {
  try {
    await client.serverInfo();
  } catch (error) {
    if (isUnauthenticated(error)) {
      showLogin();
      return;
    }
    clear(main);
    append(main, el("h1", {}, "Cannot reach the server"), el("p", { class: "bad" }, describe(error)));
    return;
  }
  logoutButton.hidden = false;
  approvals.start((error) => {
    if (isUnauthenticated(error)) showLogin("The login ended; log in again.");
  });
  route();
}

approvals.listen(() => {
  const count = approvals.pending.length;
  badge.textContent = count > 0 ? String(count) : "";
  badge.setAttribute("aria-label", `${count} pending`);
});
window.addEventListener("hashchange", () => {
  if (logoutButton.hidden) return;
  route();
  main.focus();
});
logoutButton.addEventListener("click", () => {
  void logout().then(() => showLogin());
});
void start();

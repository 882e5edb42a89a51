// Installed bundles: reference, digest, size, agents with their models and tool rules.

import { client, describe } from "../api.js";
import { append, clear, el, fields, say } from "../dom.js";
import { when } from "../format.js";
import type { Page } from "../router.js";
import { visible } from "../visible.js";

export function bundlesPage(main: HTMLElement): Page {
  const status = el("p", { class: "status", role: "status" });
  const list = el("ul", { class: "cards", "aria-label": "Bundles" });
  const file = el("input", { id: "archive", name: "archive", type: "file", accept: ".tar.gz,.tgz,application/gzip" });
  const namespace = el("input", { id: "namespace", name: "namespace", autocomplete: "off", placeholder: "local" });
  const importStatus = el("p", { class: "status", role: "status" });
  const importForm = el(
    "form",
    { class: "inline", "aria-label": "Import a bundle archive" },
    el("div", { class: "field" }, el("label", { for: "archive" }, "Bundle archive (.tar.gz)"), file),
    el("div", { class: "field" }, el("label", { for: "namespace" }, "Namespace"), namespace),
    el("button", { type: "submit" }, "Import"),
  );
  importForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = file.files?.[0];
    if (!chosen) {
      say(importStatus, "Choose an archive first.", "bad");
      return;
    }
    say(importStatus, "Importing…");
    // The HTTP gateway's POST /bundles: gRPC-Web cannot stream a request from a browser.
    const query = namespace.value.trim() ? `?namespace=${encodeURIComponent(namespace.value.trim())}` : "";
    fetch(`/bundles${query}`, { method: "POST", headers: { "content-type": "application/gzip" }, body: chosen })
      .then(async (response) => {
        const body = (await response.json()) as {
          bundle?: { ref?: { namespace?: string; name?: string; version?: string } };
          error?: { message?: string };
        };
        if (!response.ok) {
          say(importStatus, body.error?.message ?? `import failed (${response.status})`, "bad");
          return;
        }
        const ref = body.bundle?.ref;
        say(importStatus, `Imported ${ref?.namespace}/${ref?.name}@${ref?.version}.`, "ok");
        file.value = "";
        void load();
      })
      .catch((error: unknown) => say(importStatus, describe(error), "bad"));
  });
  clear(main);
  append(
    main,
    el("h1", {}, "Bundles"),
    importForm,
    importStatus,
    status,
    list,
  );
  let closed = false;
  const load = async () => {
    say(status, "Loading bundles…");
    try {
      const bundles = await client.listBundles().all();
      if (closed) return;
      clear(list);
      for (const b of bundles) {
        const ref = b.ref ? `${b.ref.namespace}/${b.ref.name}@${b.ref.version}` : "?";
        const agents = el("ul");
        const item = el(
          "li",
          {},
          el("h2", {}, visible(ref, true)),
          b.description ? el("p", {}, visible(b.description)) : null,
          fields([
            ["Digest", el("code", {}, b.ref?.digest ?? "")],
            ["Installed", when(b.installedAt)],
            ["Size", `${b.sizeBytes} bytes in ${b.fileCount} files`],
            ["Default agent", b.defaultAgentId],
          ]),
          el("h3", {}, "Agents"),
          agents,
        );
        append(list, item);
        client
          .listAgents(ref)
          .then((infos) => {
            for (const a of infos) {
              const model = a.model ? `${a.model.provider}/${a.model.name}` : "—";
              append(
                agents,
                el(
                  "li",
                  {},
                  el("strong", {}, visible(a.id, true)),
                  ` · model ${visible(model, true)}`,
                  a.toolsAsk.length ? ` · asks for ${visible(a.toolsAsk.join(", "), true)}` : "",
                  a.toolsAllow.length ? ` · allows ${visible(a.toolsAllow.join(", "), true)}` : "",
                ),
              );
            }
          })
          .catch((error: unknown) => append(agents, el("li", { class: "bad" }, describe(error))));
      }
      say(status, bundles.length === 0 ? "No bundles installed." : `${bundles.length} bundles.`);
    } catch (error) {
      say(status, describe(error), "bad");
    }
  };
  void load();
  return { close: () => { closed = true; } };
}

// Builds the console into dist/: one minified script (the sources and the TypeScript
// SDK's browser entry, over gRPC-Web), the page and the style sheet, copied as they are.
// The output depends only on the sources and the pinned packages, so `scripts/test`
// rebuilds it and checks that dist/ is what is committed (it is embedded in odysseyd).

import { copyFile, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, "dist");
await mkdir(dist, { recursive: true });

const result = await build({
  entryPoints: [join(here, "src", "main.ts")],
  bundle: true,
  minify: true,
  platform: "browser",
  format: "esm",
  target: "es2022",
  outfile: join(dist, "console.js"),
  // The SDK's sources resolve their packages from the console's own node_modules.
  alias: { "@odyssey-ai/client/web": join(here, "..", "client", "typescript", "src", "web.ts") },
  nodePaths: [join(here, "node_modules")],
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
if (result.errors.length > 0) {
  process.exit(1);
}
await copyFile(join(here, "src", "index.html"), join(dist, "index.html"));
await copyFile(join(here, "src", "console.css"), join(dist, "console.css"));

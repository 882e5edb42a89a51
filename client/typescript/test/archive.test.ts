// Packing a project folder: deterministic bytes, skipped entries, links kept inside.

import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { gunzipSync } from "node:zlib";
import { after, test } from "node:test";

import { packProject } from "../src/index.js";

const dirs: string[] = [];
after(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

async function project(): Promise<{ dir: string; root: string }> {
  const dir = await mkdtemp(join(tmpdir(), "odyssey-ts-pack-"));
  dirs.push(dir);
  const root = join(dir, "p");
  const files: Record<string, string> = {
    "odyssey.bundle.yaml": "name: x\n",
    "agents/main/agent.yaml": "kind: prompt\n",
    ".git/file": "never packed\n",
    "target/file": "never packed\n",
    "node_modules/file": "never packed\n",
    ".env": "SECRET=1\n",
  };
  for (const [rel, body] of Object.entries(files)) {
    await mkdir(dirname(join(root, rel)), { recursive: true });
    await writeFile(join(root, rel), body);
  }
  return { dir, root };
}

/** The names and header fields of a tar + gzip archive's entries. */
function entries(archive: Uint8Array): { name: string; type: string; mtime: number }[] {
  const tar = gunzipSync(archive);
  const found = [];
  for (let offset = 0; offset + 512 <= tar.length; ) {
    const header = tar.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start: number, length: number) =>
      header.subarray(start, start + length).toString("latin1").replace(/\0.*$/s, "").trim();
    const prefix = field(345, 155);
    const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
    const size = parseInt(field(124, 12) || "0", 8);
    found.push({ name, type: field(156, 1) || "0", mtime: parseInt(field(136, 12) || "0", 8) });
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return found;
}

test("the same folder packs to the same bytes, without hidden or build folders", async () => {
  const { root } = await project();
  const first = await packProject(root);
  await utimes(join(root, "odyssey.bundle.yaml"), 1, 1);
  const second = await packProject(root);
  assert.deepEqual(Buffer.from(second), Buffer.from(first));
  const packed = entries(first);
  assert.deepEqual(packed.map((e) => e.name), ["agents/main/agent.yaml", "odyssey.bundle.yaml"]);
  assert.ok(packed.every((e) => e.type === "0"), JSON.stringify(packed));
});

test("links inside the project are packed, links out of it refused", async () => {
  const { dir, root } = await project();
  await symlink(join(root, "odyssey.bundle.yaml"), join(root, "alias.yaml"));
  assert.ok(entries(await packProject(root)).some((e) => e.name === "alias.yaml"));

  await writeFile(join(dir, "secret.txt"), "outside\n");
  await symlink(join(dir, "secret.txt"), join(root, "leak.txt"));
  await assert.rejects(packProject(root), /outside the project/);
});

import { lstat, readdir, realpath, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { create } from "tar";

/**
 * Packs the bundle project in `dir` as a tar + gzip archive for BuildBundle.
 *
 * Regular files only, sorted by path, without owners or times, so the same folder always
 * uploads the same bytes. Hidden entries, `target/` and `node_modules/` are skipped at any
 * depth. A symlink is packed as the file it points to when that stays inside the project;
 * one pointing outside is an error rather than a silent omission.
 */
export async function packProject(dir: string): Promise<Uint8Array> {
  const root = await realpath(dir);
  if (!(await stat(root)).isDirectory()) {
    throw new Error(`${dir}: not a folder`);
  }
  const files: string[] = [];
  await walk(root, root, files);
  files.sort();
  const stream = create(
    { cwd: root, gzip: true, portable: true, noMtime: true, follow: true, noDirRecurse: true },
    files,
  );
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    chunks.push(chunk);
  }
  return new Uint8Array(Buffer.concat(chunks));
}

const SKIPPED = new Set(["target", "node_modules"]);

async function walk(root: string, dir: string, files: string[]): Promise<void> {
  for (const name of await readdir(dir)) {
    if (name.startsWith(".") || SKIPPED.has(name)) {
      continue;
    }
    const path = join(dir, name);
    const info = await lstat(path);
    let target = info;
    if (info.isSymbolicLink()) {
      const real = await realpath(path);
      const rel = relative(root, real);
      if (rel === ".." || rel.startsWith(`..${sep}`)) {
        throw new Error(`${path}: the link points outside the project (${real})`);
      }
      target = await stat(real);
      if (target.isDirectory()) {
        throw new Error(`${path}: a link to a folder is not packed; link the files`);
      }
    }
    if (target.isDirectory()) {
      await walk(root, path, files);
    } else if (target.isFile()) {
      files.push(relative(root, path).split(sep).join("/"));
    } else {
      throw new Error(`${path}: not a regular file`);
    }
  }
}

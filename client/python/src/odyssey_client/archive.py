"""Packing a bundle project folder as tar + gzip for BuildBundle.

The archive is deterministic (regular files only, sorted, mtime 0, owner 0, mode 0644 or
0755), so building the same folder twice uploads the same bytes. Hidden entries,
``target/`` and ``node_modules/`` are skipped at any depth. A symlink is packed as the file
it points to when that stays inside the project; one pointing outside is an error, never a
silent omission.
"""

from __future__ import annotations

import gzip
import io
import os
import stat
import tarfile
from pathlib import Path

_SKIPPED = {"target", "node_modules"}


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in _SKIPPED


def _files(root: Path) -> list[tuple[str, Path]]:
    found: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        kept = []
        for name in sorted(dirnames):
            if _skipped(name):
                continue
            path = here / name
            if path.is_symlink():
                _inside(root, path)
            kept.append(name)
        dirnames[:] = kept
        for name in filenames:
            if _skipped(name):
                continue
            path = here / name
            real = _inside(root, path) if path.is_symlink() else path
            if not real.is_file():
                raise ValueError(f"{path}: not a regular file")
            found.append((path.relative_to(root).as_posix(), real))
    return sorted(found)


def _inside(root: Path, link: Path) -> Path:
    target = link.resolve()
    if target != root and root not in target.parents:
        raise ValueError(f"{link}: the link points outside the project ({target})")
    return target


def pack_project(folder: str | os.PathLike[str]) -> bytes:
    """Returns the project folder as a tar + gzip archive."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise ValueError(f"{folder}: not a folder")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for rel, path in _files(root):
            data = path.read_bytes()
            info = tarfile.TarInfo(rel)
            info.size = len(data)
            info.mtime = 0
            executable = path.stat().st_mode & stat.S_IXUSR
            info.mode = 0o755 if executable else 0o644
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)

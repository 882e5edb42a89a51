"""Packing a project folder: deterministic bytes, skipped entries, links kept inside."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from odyssey_client import pack_project


def _names(archive: bytes) -> list[str]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return tar.getnames()


def _project(root: Path) -> Path:
    (root / "agents" / "main").mkdir(parents=True)
    (root / "odyssey.bundle.yaml").write_text("name: x\n")
    (root / "agents" / "main" / "agent.yaml").write_text("kind: prompt\n")
    for skipped in (".git", "target", "node_modules"):
        (root / skipped).mkdir()
        (root / skipped / "file").write_text("never packed\n")
    (root / ".env").write_text("SECRET=1\n")
    return root


def test_the_same_folder_packs_to_the_same_bytes(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    first = pack_project(root)
    os.utime(root / "odyssey.bundle.yaml", (1, 1))
    assert pack_project(root) == first
    assert _names(first) == ["agents/main/agent.yaml", "odyssey.bundle.yaml"]
    with tarfile.open(fileobj=io.BytesIO(first), mode="r:gz") as tar:
        for member in tar.getmembers():
            assert member.isfile() and member.mtime == 0 and member.uid == 0


def test_links_inside_are_packed_as_files_and_outside_refused(tmp_path: Path) -> None:
    root = _project(tmp_path / "p")
    (root / "alias.yaml").symlink_to(root / "odyssey.bundle.yaml")
    assert "alias.yaml" in _names(pack_project(root))

    secret = tmp_path / "secret.txt"
    secret.write_text("outside\n")
    (root / "leak.txt").symlink_to(secret)
    with pytest.raises(ValueError, match="outside the project"):
        pack_project(root)


def test_a_file_is_not_a_project(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        pack_project(file)

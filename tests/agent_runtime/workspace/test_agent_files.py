"""File tools confined to the workspace: escapes, symlinks, quota, protected files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_runtime.workspace.files import (
    FileAccessError,
    PathEscape,
    ProtectedFile,
    QuotaExceeded,
    SymlinkRefused,
    WorkspaceFiles,
)


@pytest.fixture
def files(tmp_path: Path) -> WorkspaceFiles:
    root = tmp_path / "workspace"
    root.mkdir()
    return WorkspaceFiles(root, quota_bytes=1000)


def test_write_read_list(files: WorkspaceFiles) -> None:
    assert files.write("notes/today.md", "hello") == 5
    assert files.read("notes/today.md") == "hello"
    assert files.read("./notes/today.md") == "hello"
    listing = files.list(".")
    assert [(e.path, e.is_dir) for e in listing] == [("notes", True)]
    assert [(e.path, e.size) for e in files.list("notes")] == [("notes/today.md", 5)]


@pytest.mark.parametrize("path", ["../outside.txt", "notes/../../outside.txt", "/etc/passwd", "", "a\x00b"])
def test_path_escapes_are_refused(files: WorkspaceFiles, path: str) -> None:
    with pytest.raises(PathEscape):
        files.write(path, "x")
    with pytest.raises(PathEscape):
        files.read(path)
    assert not (files.root.parent / "outside.txt").exists()


def test_symlinks_are_refused_anywhere_on_the_path(files: WorkspaceFiles, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(secret, files.root / "link.txt")
    os.symlink(outside, files.root / "dirlink")
    with pytest.raises(SymlinkRefused):
        files.read("link.txt")
    with pytest.raises(SymlinkRefused):
        files.write("link.txt", "overwrite")
    with pytest.raises(SymlinkRefused):
        files.write("dirlink/new.txt", "escape")
    with pytest.raises(SymlinkRefused):
        files.read("dirlink/anything")
    assert secret.read_text(encoding="utf-8") == "top secret"
    assert list(outside.iterdir()) == []
    assert [e.path for e in files.list()] == []


def test_quota_counts_the_whole_workspace(files: WorkspaceFiles) -> None:
    files.write("a.txt", "x" * 600)
    with pytest.raises(QuotaExceeded) as refused:
        files.write("b.txt", "y" * 401)
    assert "1001 bytes" in str(refused.value) and "1000 bytes" in str(refused.value)
    assert not (files.root / "b.txt").exists()
    files.write("b.txt", "y" * 400)
    # Replacing a file only counts the difference.
    files.write("a.txt", "z" * 600)
    assert files.usage() == 1000


@pytest.mark.parametrize("name", ["SOUL.md", "MEMORY.md", "SYSTEM.md", "HEARTBEAT.md"])
def test_identity_files_are_not_writable_with_write_file(files: WorkspaceFiles, name: str) -> None:
    with pytest.raises(ProtectedFile, match="update_workspace"):
        files.write(name, "x")
    with pytest.raises(ProtectedFile):
        files.write("learnings/errors.md", "x")


def test_reading_a_missing_file_or_a_folder_is_a_clear_error(files: WorkspaceFiles) -> None:
    files.write("d/x.txt", "1")
    with pytest.raises(FileAccessError, match="does not exist"):
        files.read("nope.txt")
    with pytest.raises(FileAccessError, match="folder"):
        files.read("d")


def test_large_reads_are_cut_with_a_notice(files: WorkspaceFiles) -> None:
    (files.root / "big.txt").write_text("q" * 500, encoding="utf-8")
    text = files.read("big.txt", limit=100)
    assert text.startswith("q" * 100) and "only the first 100 bytes" in text

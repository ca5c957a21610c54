from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_runtime.workspace import versioned
from agent_runtime.workspace.versioned import (
    CAPS,
    WORKSPACE_FILES,
    CapExceeded,
    InvalidContent,
    ReadOnlyFile,
    UnknownFile,
    UnknownVersion,
    Workspace,
    normalize_name,
    scaffold,
)


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return scaffold(tmp_path, seeds={"SOUL.md": "I am careful."}, readonly={"SYSTEM.md": "policy v1"})


@pytest.mark.parametrize("name", [n for n, cap in CAPS.items() if cap is not None and n != "INTERFACE.md"])
def test_cap_is_accepted_exactly_and_refused_one_byte_over(ws: Workspace, name: str) -> None:
    cap = CAPS[name]
    assert cap is not None
    author = "operator"
    before = ws.read(name)
    with pytest.raises(CapExceeded) as refused:
        ws.write(name, "x" * (cap + 1), author)
    assert refused.value.cap == cap and refused.value.size == cap + 1
    assert str(cap) in str(refused.value) and str(cap + 1) in str(refused.value)
    assert ws.read(name) == before
    result = ws.write(name, "x" * cap, author)
    assert result.size == cap
    assert ws.path(name).stat().st_size == cap


def test_cap_counts_utf8_bytes_not_characters(ws: Workspace) -> None:
    cap = CAPS["SOUL.md"]
    assert cap is not None
    two_byte = "é" * (cap // 2)
    ws.write("SOUL.md", two_byte, "agent")
    with pytest.raises(CapExceeded):
        ws.write("SOUL.md", two_byte + "a", "agent")
    assert ws.read("SOUL.md") == two_byte


def test_heartbeat_is_uncapped(ws: Workspace) -> None:
    ws.write("HEARTBEAT.md", "- check\n" * 20_000, "agent")
    assert ws.path("HEARTBEAT.md").stat().st_size == len("- check\n") * 20_000


@pytest.mark.parametrize("name", ["SYSTEM.md", "PROJECT.md", "AGENTS.md"])
def test_read_only_files_refused_for_agent_and_job(ws: Workspace, name: str) -> None:
    before = ws.read(name)
    for author in ("agent", "job"):
        with pytest.raises(ReadOnlyFile, match=name):
            ws.write(name, "overwritten", author)  # type: ignore[arg-type]
    assert ws.read(name) == before
    ws.write(name, "operator text", "operator")
    assert ws.read(name) == "operator text"


def test_versions_record_every_write_with_author_and_reason(ws: Workspace) -> None:
    ws.write("USER.md", "one", "operator", "first")
    ws.write("USER.md", "two", "agent", "second")
    versions = ws.history("USER.md")
    assert [v.author for v in versions] == ["system", "operator", "agent"]
    assert [v.reason for v in versions][1:] == ["first", "second"]
    assert [v.version for v in versions] == [1, 2, 3]
    assert ws.read_version("USER.md", 2) == "one"
    assert ws.read_version("USER", 3) == "two"
    assert versions[2].size == 3
    with pytest.raises(UnknownVersion):
        ws.read_version("USER.md", 9)


def test_identical_write_does_not_add_a_version(ws: Workspace) -> None:
    first = ws.write("USER.md", "same", "agent")
    again = ws.write("USER.md", "same", "agent")
    assert first.version == again.version
    assert len(ws.history("USER.md")) == 2


def test_direct_edit_is_detected_and_kept_as_a_version(ws: Workspace) -> None:
    ws.write("USER.md", "from tool", "agent")
    ws.path("USER.md").write_text("edited in vim", encoding="utf-8")
    assert ws.changed_outside("USER.md")
    ws.write("USER.md", "after", "agent")
    versions = ws.history("USER.md")
    assert versions[-2].author == "external"
    assert ws.read_version("USER.md", versions[-2].version) == "edited in vim"
    assert not ws.changed_outside("USER.md")


def test_unknown_file_and_name_forms(ws: Workspace) -> None:
    assert normalize_name("soul") == "SOUL.md"
    assert normalize_name("Memory.md") == "MEMORY.md"
    with pytest.raises(UnknownFile):
        ws.write("../etc/passwd", "x", "operator")
    with pytest.raises(UnknownFile):
        ws.read("notes.md")


def test_no_temp_files_left_behind(ws: Workspace) -> None:
    ws.write("SOUL.md", "v2", "agent")
    leftovers = [p for p in ws.root.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_scaffold_never_overwrites_but_regenerates_read_only(tmp_path: Path) -> None:
    first = scaffold(tmp_path, {"SOUL.md": "seed"}, {"SYSTEM.md": "sys v1", "PROJECT.md": "p"})
    first.write("SOUL.md", "agent's own words", "agent")
    again = scaffold(tmp_path, {"SOUL.md": "new seed"}, {"SYSTEM.md": "sys v2", "PROJECT.md": "p"})
    assert again.read("SOUL.md") == "agent's own words"
    assert again.read("SYSTEM.md") == "sys v2"
    assert len(again.history("PROJECT.md")) == 1
    for name in WORKSPACE_FILES:
        assert (tmp_path / "workspace" / name).is_file()
    for folder in ("workspace/memory", "workspace/learnings", "versions"):
        assert (tmp_path / folder).is_dir()
    # The turn history and the runtime's files are the agent's own: made in its own storage.
    assert not (tmp_path / "history").exists() and not (tmp_path / ".runtime").exists()


def test_scaffold_refuses_a_non_generated_read_only_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidContent):
        scaffold(tmp_path, {}, {"SOUL.md": "x"})


def test_files_lists_sizes_caps_and_read_only(ws: Workspace) -> None:
    infos = {info.name: info for info in ws.files()}
    assert infos["SOUL.md"].size == len("I am careful.")
    assert infos["SOUL.md"].cap == 4096
    assert infos["SYSTEM.md"].read_only and not infos["SOUL.md"].read_only
    assert infos["HEARTBEAT.md"].cap is None


def test_lock_is_reentrant_for_its_holder_and_excludes_others(ws: Workspace) -> None:
    import threading

    order: list[str] = []
    with ws.locked("SOUL"):
        ws.write("SOUL.md", "inside the lock", "operator")  # same thread: no deadlock
        other = threading.Thread(
            target=lambda: (ws.write("SOUL.md", "other", "agent"), order.append("other"))
        )
        other.start()
        other.join(0.3)
        order.append("holder")
    other.join()
    assert order == ["holder", "other"]
    assert ws.read("SOUL.md") == "other"


def test_update_workspace_tool_appends_and_reports_refusals(ws: Workspace) -> None:
    from agent_runtime.tools.builtin import workspace_tool
    from agent_runtime.tools.registry import ToolRegistry

    registry = ToolRegistry([workspace_tool(ws)])
    ws.write("MEMORY.md", "- first", "agent")
    done = registry.dispatch(
        "update_workspace", {"name": "MEMORY.md", "content": "- second", "mode": "append"}
    )
    assert done.ok and "version" in done.output
    assert ws.read("MEMORY.md") == "- first\n- second"
    refused = registry.dispatch("update_workspace", {"name": "SOUL.md", "content": "x" * 5000})
    assert not refused.ok and "over its cap of 4096 bytes" in refused.output
    not_allowed = registry.dispatch("update_workspace", {"name": "SYSTEM.md", "content": "mine now"})
    assert not not_allowed.ok and "SYSTEM.md" in not_allowed.output
    assert ws.read("SYSTEM.md") == "policy v1"


def test_interface_is_validated_as_a_contract(ws: Workspace) -> None:
    good = "---\noperations:\n  - name: summarize\n    input: {type: object}\n---\nI summarize.\n"
    ws.write("INTERFACE.md", good, "agent")
    with pytest.raises(InvalidContent, match=r"INTERFACE\.md was not written") as refused:
        ws.write("INTERFACE.md", "---\noperations: [\n---\n", "agent")
    assert "YAML" in str(refused.value)
    assert ws.read("INTERFACE.md") == good


class SyncCalls:
    """Counts fsync(2) and syncfs(2) calls made by the workspace module."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, syncfs: bool) -> None:
        self.fsyncs = 0
        self.syncfs = 0
        real_fsync = versioned.os.fsync

        def fsync(fd: int) -> None:
            self.fsyncs += 1
            real_fsync(fd)

        def count_syncfs(_fd: int) -> int:
            self.syncfs += 1
            return 0

        monkeypatch.setattr(versioned.os, "fsync", fsync)
        monkeypatch.setattr(versioned, "_libc_syncfs", lambda: count_syncfs if syncfs else None)


def test_a_new_workspace_is_synced_once_not_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = SyncCalls(monkeypatch, syncfs=True)
    ws = scaffold(tmp_path, seeds={"SOUL.md": "I am careful."}, readonly={"SYSTEM.md": "policy v1"})
    assert (calls.fsyncs, calls.syncfs) == (0, 1)
    assert ws.read("SOUL.md") == "I am careful." and len(ws.history("SOUL.md")) == 1
    # Outside a scaffold every write is made durable on its own, before it returns.
    ws.write("USER.md", "prefers short answers", "operator")
    assert calls.fsyncs >= 3 and calls.syncfs == 1


def test_without_syncfs_each_written_file_and_folder_is_synced_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = SyncCalls(monkeypatch, syncfs=False)
    with versioned.synced_together():
        for i in range(3):
            versioned.atomic_write_bytes(tmp_path / "notes" / f"{i}.md", b"x")
            versioned.atomic_write_bytes(tmp_path / "notes" / f"{i}.md", b"y")
        assert calls.fsyncs == 0
        with versioned.synced_together():  # nested: synced by the outer block only
            versioned.atomic_write_bytes(tmp_path / "notes" / "3.md", b"z")
        assert calls.fsyncs == 0
    assert calls.fsyncs == 4 + 1  # the four files once each, their folder once
    assert (tmp_path / "notes" / "0.md").read_bytes() == b"y"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs(2) is Linux's")
def test_syncfs_is_found_and_syncs_the_filesystem(tmp_path: Path) -> None:
    assert versioned._libc_syncfs() is not None
    assert versioned._sync_filesystem(tmp_path)

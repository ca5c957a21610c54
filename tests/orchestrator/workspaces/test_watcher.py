"""Direct edits in the host folder: noticed by watchdog, checked, versioned or reverted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from watchdog.events import FileSystemEvent

from agent_runtime.workspace.versioned import CAPS, Workspace
from orchestrator.events import Event, EventType
from orchestrator.services import Services
from orchestrator.workspaces import watcher as watcher_module
from orchestrator.workspaces.watcher import DIRECT_EDIT_REASON, WorkspaceWatcher

WAIT_S = 20.0


@pytest.fixture
def watcher(services: Services) -> Iterator[WorkspaceWatcher]:
    with WorkspaceWatcher(
        services.fleet_view, services.paths, services.events, services.workspaces, debounce_s=0.1
    ) as running:
        yield running


def workspace(services: Services) -> Workspace:
    return Workspace(services.paths.agent_dir("alpha"))


def wait_for_event(services: Services, event_type: EventType, after: int = 0) -> Event:
    """Poll the event log until the watcher has published `event_type` (generous deadline)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for event in services.events.recent(agent="alpha", after=after):
            if event.type == event_type.value:
                return event
        time.sleep(0.02)
    raise AssertionError(f"no {event_type.value} event within {WAIT_S}s")


def editor_save(path: Path, text: str) -> None:
    """Write in place the way many editors do (truncate, then write)."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write(text)


def test_good_direct_edit_is_versioned_as_operator(services: Services, watcher: WorkspaceWatcher) -> None:
    path = services.paths.workspace("alpha") / "SOUL.md"
    editor_save(path, "# alpha\n\nEdited in vim.\n")
    event = wait_for_event(services, EventType.WORKSPACE_CHANGED)
    assert event.data["author"] == "operator"
    assert event.data["file"] == "SOUL.md"
    assert event.data["source"] == "host_folder"
    assert watcher.wait_idle(WAIT_S)
    history = workspace(services).history("SOUL.md")
    assert [v.author for v in history] == ["system", "operator"]
    assert history[-1].reason == DIRECT_EDIT_REASON
    assert event.data["version"] == history[-1].version
    assert workspace(services).read("SOUL.md") == "# alpha\n\nEdited in vim.\n"
    assert workspace(services).read_version("SOUL.md", 2) == "# alpha\n\nEdited in vim.\n"


def test_over_cap_direct_edit_is_reverted_and_reported(services: Services, watcher: WorkspaceWatcher) -> None:
    path = services.paths.workspace("alpha") / "SOUL.md"
    good = path.read_text()
    cap = CAPS["SOUL.md"]
    assert cap is not None
    editor_save(path, "y" * (cap + 1))
    event = wait_for_event(services, EventType.WORKSPACE_REFUSED)
    assert watcher.wait_idle(WAIT_S)
    assert "cap" in event.data["reason"] and str(cap + 1) in event.data["reason"]
    assert event.data["restored_version"] == 1
    assert path.read_text() == good
    assert [v.author for v in workspace(services).history("SOUL.md")] == ["system"]
    kept = Path(event.data["kept_as"])
    assert kept.read_text() == "y" * (cap + 1)
    assert not kept.is_relative_to(services.paths.workspace("alpha"))


def test_broken_contract_direct_edit_is_reverted(services: Services, watcher: WorkspaceWatcher) -> None:
    path = services.paths.workspace("alpha") / "INTERFACE.md"
    good = path.read_text()
    editor_save(path, "---\noperations: [unclosed\n---\n")
    event = wait_for_event(services, EventType.WORKSPACE_REFUSED)
    assert watcher.wait_idle(WAIT_S)
    assert "INTERFACE.md" in event.data["reason"]
    assert path.read_text() == good


def test_writes_through_the_workspace_api_are_not_reprocessed(
    services: Services, watcher: WorkspaceWatcher
) -> None:
    workspace(services).write("MEMORY.md", "# Memory\n- agent fact\n", "agent", "flush")
    # A later direct edit proves the watcher is live; the agent's write must not have been touched.
    marker = services.events.publish(EventType.AGENT_REPORTED, agent="alpha")
    editor_save(services.paths.workspace("alpha") / "USER.md", "prefers short answers\n")
    event = wait_for_event(services, EventType.WORKSPACE_CHANGED, after=marker.seq)
    assert watcher.wait_idle(WAIT_S)
    assert event.data["file"] == "USER.md"
    memory = workspace(services).history("MEMORY.md")
    assert [v.author for v in memory] == ["system", "agent"]
    changed = [e for e in services.events.recent(agent="alpha") if e.type == "workspace.changed"]
    assert [e.data["file"] for e in changed] == ["USER.md"]


def test_deleted_file_is_restored(services: Services, watcher: WorkspaceWatcher) -> None:
    path = services.paths.workspace("alpha") / "SOUL.md"
    good = path.read_text()
    path.unlink()
    event = wait_for_event(services, EventType.WORKSPACE_REFUSED)
    assert watcher.wait_idle(WAIT_S)
    assert "deleted" in event.data["reason"]
    assert path.read_text() == good


def test_start_scan_catches_edits_made_while_nobody_watched(services: Services) -> None:
    path = services.paths.workspace("alpha") / "USER.md"
    path.write_text("edited while the orchestrator was down\n")
    watcher = WorkspaceWatcher(services.fleet_view, services.paths, services.events, services.workspaces)
    outcomes = {(o.agent, o.file): o for o in watcher.scan()}
    assert outcomes[("alpha", "USER.md")].action == "recorded"
    assert outcomes[("alpha", "SOUL.md")].action == "unchanged"
    assert workspace(services).history("USER.md")[-1].author == "operator"


def test_editor_temp_files_are_ignored(services: Services) -> None:
    watcher = WorkspaceWatcher(services.fleet_view, services.paths, services.events, services.workspaces)
    root = services.paths.workspace("alpha")
    assert watcher.key_of(root / "SOUL.md") == ("alpha", "SOUL.md")
    for ignored in (
        root / ".SOUL.md.swp",
        root / "SOUL.md~",
        root / "4913",
        root / "learnings" / "x.md",
        services.paths.agent_dir("alpha") / "versions" / "SOUL" / "000001.md",
        services.paths.agents / "stranger" / "workspace" / "SOUL.md",
    ):
        assert watcher.key_of(ignored) is None, ignored


def test_a_save_by_rename_is_noticed(services: Services, watcher: WorkspaceWatcher) -> None:
    """Editors that write a new file and rename it over the old one (the kernel reports a move)."""
    path = services.paths.workspace("alpha") / "SOUL.md"
    staged = path.parent.parent / "SOUL.md.saving"
    staged.write_text("# alpha\n\nSaved by rename.\n", encoding="utf-8")
    staged.replace(path)
    event = wait_for_event(services, EventType.WORKSPACE_CHANGED)
    assert event.data["file"] == "SOUL.md"
    assert watcher.wait_idle(WAIT_S)
    assert workspace(services).read("SOUL.md") == "# alpha\n\nSaved by rename.\n"


def test_reading_the_workspace_sends_the_watcher_nothing(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel reports changes only: the opens and reads of every inspection (and of anyone
    reading the folder) never reach the observer's threads."""
    received: list[str] = []
    original = watcher_module._Handler.on_any_event

    def recording(handler: watcher_module._Handler, event: FileSystemEvent) -> None:
        received.append(event.event_type)
        original(handler, event)

    monkeypatch.setattr(watcher_module._Handler, "on_any_event", recording)
    with WorkspaceWatcher(
        services.fleet_view, services.paths, services.events, services.workspaces, debounce_s=0.1
    ) as watcher:
        for path in services.paths.workspace("alpha").rglob("*"):
            if path.is_file():
                path.read_bytes()
        editor_save(services.paths.workspace("alpha") / "MEMORY.md", "# Memory\n\nA change.\n")
        assert wait_for_event(services, EventType.WORKSPACE_CHANGED).data["file"] == "MEMORY.md"
        assert watcher.wait_idle(WAIT_S)
    assert "modified" in received
    assert not {"opened", "closed_no_write"} & set(received)

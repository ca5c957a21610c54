"""Notice edits made directly in the operator's copy of a workspace, check them, record them.

An operator may open `.flotilla/agents/<name>/workspace/SOUL.md` in any editor. That folder is
the orchestrator's own: no agent can write there (agents have storage of their own and send
their writes over their link), so what the watcher reads is the operator's. When such a
file changes, the watcher waits for the editor's save to settle, then:

- skips it when the live content is the latest recorded version (a write that went through
  `Workspace.write`, by the agent or the operator API, or our own restore);
- checks it like any operator write (cap, INTERFACE.md contract); a good edit becomes a new
  version by the operator (WORKSPACE_CHANGED) and is handed to the agent over its link;
- a refused edit is reported (WORKSPACE_REFUSED, with the reason) and the last good version is
  written back atomically, so it stays in force.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from watchdog.events import (
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer

from agent_runtime import (
    WORKSPACE_FILES,
    UnknownVersion,
    Workspace,
    WorkspaceError,
    atomic_write_bytes,
)
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.state.paths import StatePaths
from orchestrator.workspaces.access import AgentWorkspace, WorkspaceAccess
from orchestrator.workspaces.retention import prune_file_history

log = logging.getLogger(__name__)

DEFAULT_DEBOUNCE_S = 0.4
DIRECT_EDIT_REASON = "edited in the host folder"
# Beside the operator's copy, outside workspace/: refused direct edits, kept for the operator.
REFUSED_FOLDER = "refused"
# What can change a file: the kernel reports only these (inotify's mask). Opens and reads, which
# every inspection and every version written beside the workspace make, are never sent: at start
# they were about 80 events per agent, each read and dispatched by the observer's threads.
FILE_CHANGES = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent, FileClosedEvent]


@dataclass(frozen=True)
class Outcome:
    """What the watcher did with one file after its changes settled."""

    agent: str
    file: str
    action: str  # "unchanged", "recorded", "refused"
    version: int | None = None
    reason: str = ""


class WorkspaceWatcher:
    """Watches every agent's workspace folder under `.flotilla/agents/`."""

    def __init__(
        self,
        fleet: FleetView,
        paths: StatePaths,
        events: EventBus,
        workspaces: WorkspaceAccess,
        debounce_s: float = DEFAULT_DEBOUNCE_S,
    ) -> None:
        self._fleet = fleet
        self._paths = paths
        self._events = events
        self._workspaces = workspaces
        self._agents_root = paths.agents
        self._debounce_s = debounce_s
        self._pending: dict[tuple[str, str], float] = {}
        self._wake = threading.Condition()
        self._stopping = False
        self._observer: Observer | None = None  # type: ignore[valid-type]
        self._worker: threading.Thread | None = None
        self._in_flight = 0
        # The start-up scan and the worker thread may look at the same file at once.
        self._inspecting = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Check what changed while nobody watched, then follow the folders live."""
        self._agents_root.mkdir(parents=True, exist_ok=True)
        self._stopping = False
        self._worker = threading.Thread(target=self._drain, name="workspace-watcher", daemon=True)
        self._worker.start()
        observer = Observer()
        observer.schedule(_Handler(self), str(self._agents_root), recursive=True, event_filter=FILE_CHANGES)
        observer.start()
        self._observer = observer
        self.scan()

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        if self._worker is not None:
            self._worker.join(timeout=5)
            self._worker = None

    def __enter__(self) -> WorkspaceWatcher:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # -- what changed ----------------------------------------------------------------------------

    def scan(self) -> list[Outcome]:
        """Inspect every workspace file of every agent now (used at start-up)."""
        outcomes = []
        for agent in sorted(self._fleet.current().config.agents):
            if not (self._agents_root / agent / "workspace").is_dir():
                continue
            for name in WORKSPACE_FILES:
                outcomes.append(self.inspect(agent, name))
        return outcomes

    def notice(self, path: str) -> None:
        """A file system event touched `path`; schedule the file for inspection once quiet."""
        key = self.key_of(Path(path))
        if key is None:
            return
        with self._wake:
            self._pending[key] = time.monotonic() + self._debounce_s
            self._wake.notify_all()

    def key_of(self, path: Path) -> tuple[str, str] | None:
        """(agent, file) when `path` is a capped workspace file of an agent of the fleet."""
        try:
            relative = path.relative_to(self._agents_root)
        except ValueError:
            return None
        parts = relative.parts
        if len(parts) != 3 or parts[1] != "workspace" or parts[2] not in WORKSPACE_FILES:
            return None
        if parts[0] not in self._fleet.current().config.agents:
            return None
        return parts[0], parts[2]

    def _drain(self) -> None:
        """Worker thread: inspect files whose last change is older than the debounce delay."""
        while True:
            with self._wake:
                due = self._take_due()
                while not due and not self._stopping:
                    self._wake.wait(timeout=self._next_wait())
                    due = self._take_due()
                if self._stopping:
                    return
                self._in_flight = len(due)
            for agent, name in due:
                self._inspect_safely(agent, name)

    def _take_due(self) -> list[tuple[str, str]]:
        now = time.monotonic()
        due = [key for key, deadline in self._pending.items() if deadline <= now]
        for key in due:
            del self._pending[key]
        return due

    def _next_wait(self) -> float | None:
        if not self._pending:
            return None
        return max(0.0, min(self._pending.values()) - time.monotonic())

    def _inspect_safely(self, agent: str, name: str) -> None:
        try:
            self.inspect(agent, name)
        except OSError as exc:
            # A folder removed under us (agent deleted) must not end the watcher.
            log.warning("cannot inspect %s/%s: %s", agent, name, exc)
        finally:
            with self._wake:
                self._in_flight -= 1
                self._wake.notify_all()

    # -- one file --------------------------------------------------------------------------------

    def inspect(self, agent: str, name: str) -> Outcome:
        """Compare the live file with its latest version and record, refuse or skip it."""
        workspace = Workspace(self._paths.agent_dir(agent))
        # The file's write lock: an agent's write in progress is never mistaken for a direct edit.
        with self._inspecting, workspace.locked(name):
            return self._inspect(agent, name)

    def _inspect(self, agent: str, name: str) -> Outcome:
        workspace = Workspace(self._paths.agent_dir(agent))
        path = workspace.path(name)
        versions = workspace.history(name)
        try:
            live = path.read_bytes()
        except FileNotFoundError:
            if not versions:
                return Outcome(agent, name, "unchanged")
            return self._refuse(workspace, agent, name, "the file was deleted outside Flotilla")
        if versions and versions[-1].sha256 == _sha256(live):
            # The agent wrote it (its writes are versioned already): only the retention rule applies.
            prune_file_history(workspace, name, self._fleet.current().config.limits)
            return Outcome(agent, name, "unchanged", versions[-1].version)
        try:
            content = live.decode("utf-8")
            workspace.check(name, content, "operator")
        except UnicodeDecodeError:
            return self._refuse(workspace, agent, name, f"{name} is not UTF-8 text")
        except WorkspaceError as refused:
            return self._refuse(workspace, agent, name, str(refused))
        return self._record(workspace, agent, name, content)

    def _record(self, workspace: Workspace, agent: str, name: str, content: str) -> Outcome:
        # Put the last recorded content back first: `Workspace.write` would otherwise file the
        # edit as an unchecked "external" version. Both writes are atomic renames.
        self._restore_last(workspace, name)
        try:
            result = workspace.write(name, content, "operator", DIRECT_EDIT_REASON)
        except WorkspaceError as refused:
            return self._refuse(workspace, agent, name, str(refused))
        prune_file_history(workspace, result.name, self._fleet.current().config.limits)
        self._events.publish(
            EventType.WORKSPACE_CHANGED,
            agent=agent,
            file=result.name,
            author="operator",
            version=result.version,
            size=result.size,
            source="host_folder",
        )
        self._workspaces.push_files(AgentWorkspace(agent, workspace), [result.name])
        log.info("recorded direct edit of %s/%s as version %d", agent, result.name, result.version)
        return Outcome(agent, result.name, "recorded", result.version)

    def _refuse(self, workspace: Workspace, agent: str, name: str, reason: str) -> Outcome:
        kept = self._keep_refused(workspace, name)
        version = self._restore_last(workspace, name)
        self._events.publish(
            EventType.WORKSPACE_REFUSED,
            agent=agent,
            file=name,
            reason=reason,
            restored_version=version,
            kept_as=str(kept) if kept else None,
            source="host_folder",
        )
        log.warning("refused direct edit of %s/%s: %s", agent, name, reason)
        return Outcome(agent, name, "refused", version, reason)

    def _keep_refused(self, workspace: Workspace, name: str) -> Path | None:
        """Copy the refused content next to the workspace so the operator's text is not lost."""
        try:
            data = workspace.path(name).read_bytes()
        except FileNotFoundError:
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = workspace.data_dir / REFUSED_FOLDER / f"{name}.{stamp}"
        atomic_write_bytes(target, data)
        return target

    def _restore_last(self, workspace: Workspace, name: str) -> int | None:
        """Write the latest recorded version back to the live file; None when there is none."""
        versions = workspace.history(name)
        if not versions:
            workspace.path(name).unlink(missing_ok=True)
            return None
        last = versions[-1].version
        try:
            text = workspace.read_version(name, last)
        except UnknownVersion:
            return None
        atomic_write_bytes(workspace.path(name), text.encode("utf-8"))
        return last

    # -- for tests and tools ---------------------------------------------------------------------

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until no change is pending or being handled (True), or the timeout passed (False)."""
        deadline = time.monotonic() + timeout_s
        with self._wake:
            while self._pending or self._in_flight:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._wake.wait(timeout=remaining)
        return True


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: WorkspaceWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.is_directory or event.event_type in ("opened", "closed_no_write"):
            return
        self._watcher.notice(str(event.src_path))
        dest = getattr(event, "dest_path", "")
        if dest:
            self._watcher.notice(str(dest))


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()

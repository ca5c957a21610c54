"""Which workspace files changed since the last tick, and whether someone other than the agent
changed them.

Authorship comes from two places. The identity files (SOUL.md, MEMORY.md, HEARTBEAT.md, ...) are
versioned by `agent_runtime.Workspace` with an author per version: a file whose live content is
not its last recorded version was written by an editor outside Flotilla. Other files carry no
author; they count as the agent's own when its turn records list them as changed, or when they
were modified while the agent was working on an inbox item or a turn.

The agent's daily logs (`memory/`) and learnings (`learnings/`) are its own notes and are not
watched at all; its turn log (`history/`) lives outside the workspace folder.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent_runtime import WORKSPACE_FILES, FileVersion, Workspace
from orchestrator.scheduler.store import FileStamp, Snapshot

UNWATCHED_FOLDERS = ("memory", "learnings")
MAX_FILES = 5000
MAX_HASHED_BYTES = 16 * 1024 * 1024
OWN_AUTHORS = frozenset({"agent", "system"})
# File times and work windows come from different clocks (filesystem vs. recorded timestamps).
WINDOW_SLACK_S = 2.0

ChangeKind = Literal["added", "modified", "deleted"]


@dataclass(frozen=True)
class FileChange:
    path: str
    kind: ChangeKind
    author: str = "unknown"

    def describe(self) -> str:
        by = "" if self.author in ("unknown", "external") else f" by {self.author}"
        if self.author == "external":
            by = " outside Flotilla"
        return f"{self.path} {self.kind}{by}"


@dataclass(frozen=True)
class WorkWindow:
    """A span (epoch seconds) during which the agent was working; `end` None means still working."""

    start: float
    end: float | None

    def covers(self, moment: float, now: float) -> bool:
        end = self.end if self.end is not None else now
        return self.start - WINDOW_SLACK_S <= moment <= end + WINDOW_SLACK_S


def _watched(relative: str) -> bool:
    parts = relative.split("/")
    if any(part.startswith(".") for part in parts):
        return False  # temp files of atomic writes, lock files, editor swap files
    return not (len(parts) > 1 and parts[0] in UNWATCHED_FOLDERS)


def _hash(path: Path, size: int, mtime_ns: int) -> str:
    if size > MAX_HASHED_BYTES:
        return f"size:{size}:mtime:{mtime_ns}"
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return digest.hexdigest()


def scan(root: Path, previous: Snapshot) -> Snapshot:
    """Stamp every watched regular file; only files whose time or size moved are hashed again."""
    snapshot: Snapshot = {}
    if not root.is_dir():
        return snapshot
    for folder, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            if not _watched(relative) or len(snapshot) >= MAX_FILES:
                continue
            try:
                info = path.lstat()
                if not path.is_file() or path.is_symlink():
                    continue
                known = previous.get(relative)
                if known and known.mtime_ns == info.st_mtime_ns and known.size == info.st_size:
                    snapshot[relative] = known
                else:
                    sha = _hash(path, info.st_size, info.st_mtime_ns)
                    snapshot[relative] = FileStamp(info.st_mtime_ns, info.st_size, sha)
            except FileNotFoundError:
                continue  # removed while we walked: the next tick sees it as deleted
    return snapshot


def diff(old: Snapshot, new: Snapshot) -> list[FileChange]:
    changes = [FileChange(path, "deleted") for path in sorted(old) if path not in new]
    for path, stamp in sorted(new.items()):
        before = old.get(path)
        if before is None:
            changes.append(FileChange(path, "added"))
        elif before.sha256 != stamp.sha256:
            changes.append(FileChange(path, "modified"))
    return changes


def _versioned_author(history: list[FileVersion], old: FileStamp | None, new: FileStamp | None) -> str:
    """Who made the change to a versioned file: the first non-agent author since the last tick."""
    if new is None:
        return "external"  # identity files are never deleted through Flotilla
    if not history or history[-1].sha256 != new.sha256:
        return "external"
    start = 0
    if old is not None:
        matches = [i for i, version in enumerate(history) if version.sha256 == old.sha256]
        start = matches[-1] + 1 if matches else len(history) - 1
    recent = history[start:] or history[-1:]
    others = [v.author for v in recent if v.author not in OWN_AUTHORS]
    return others[0] if others else recent[-1].author


def _normalize(path: str) -> str:
    clean = path.replace("\\", "/").lstrip("/")
    for prefix in ("data/workspace/", "workspace/", "./"):
        clean = clean.removeprefix(prefix)
    return clean


def attribute(
    changes: list[FileChange],
    data_dir: Path,
    old: Snapshot,
    new: Snapshot,
    own_paths: set[str],
    windows: list[WorkWindow],
    now_wall: float,
) -> list[FileChange]:
    """Each change with its author; the caller keeps those not made by the agent itself."""
    workspace = Workspace(data_dir)
    listed = {_normalize(p) for p in own_paths}
    attributed = []
    for change in changes:
        if change.path in WORKSPACE_FILES:
            history = workspace.history(change.path)
            author = _versioned_author(history, old.get(change.path), new.get(change.path))
        elif change.path in listed:
            author = "agent"
        elif change.kind == "deleted":
            author = "agent" if windows else "unknown"
        else:
            moment = new[change.path].mtime_ns / 1e9
            author = "agent" if any(w.covers(moment, now_wall) for w in windows) else "unknown"
        attributed.append(FileChange(change.path, change.kind, author))
    return attributed


def by_others(changes: list[FileChange]) -> list[FileChange]:
    return [change for change in changes if change.author not in OWN_AUTHORS]

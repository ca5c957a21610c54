"""Snapshots of the agent's own files, taken by the agent for the orchestrator's backups.

The orchestrator never opens a path in the agent's storage, so a backup asks the agent: the
agent copies what only it holds into a snapshot folder of its own storage (memory.db with
SQLite's online backup API, so the copy is consistent while the agent works; history,
learnings and daily logs as they are, append-only files cut at their last complete line), then
hands the files over in capped chunks and deletes the snapshot when told.

    snapshot.take                        -> SnapshotListing
    snapshot.read {"path", "offset"}     -> SnapshotChunk (at most CHUNK_BYTES of data)
    snapshot.drop                        -> {"dropped": bool}
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import sqlite3
from pathlib import Path

from agent_runtime.protocol import AgentOp, SnapshotChunk, SnapshotFile, SnapshotListing

SNAPSHOT_DIR = ".runtime/snapshot"
MEMORY_DB = "memory.db"
# What the agent's own storage holds that a backup keeps (relative to /data). The workspace's
# other files are the operator's copy's business; the processed log keeps redelivered items
# from being worked twice after a restore.
OWN_FOLDERS = ("history", "workspace/learnings", "workspace/memory")
OWN_FILES = (".runtime/processed.jsonl",)
CHUNK_BYTES = 1024 * 1024
SNAPSHOT_OPS = frozenset({AgentOp.SNAPSHOT_TAKE, AgentOp.SNAPSHOT_READ, AgentOp.SNAPSHOT_DROP})


class SnapshotError(Exception):
    """The snapshot could not be taken or read; the message says which file and why."""


class Snapshots:
    """Takes, serves and drops the one snapshot of an agent's own storage."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.root = data_dir / SNAPSHOT_DIR

    def take(self) -> SnapshotListing:
        self.drop()
        self.root.mkdir(parents=True)
        memory_schema = self._memory()
        for folder in OWN_FOLDERS:
            self._folder(folder)
        for name in OWN_FILES:
            self._file(self.data_dir / name, self.root / name)
        files = [self._describe(path) for path in sorted(self.root.rglob("*")) if path.is_file()]
        return SnapshotListing(files=files, memory_schema=memory_schema)

    def read(self, path: str, offset: int) -> SnapshotChunk:
        target = self._inside(path)
        if offset < 0:
            raise SnapshotError(f"offset {offset} is negative")
        with target.open("rb") as source:
            source.seek(offset)
            data = source.read(CHUNK_BYTES)
            end = source.tell() >= target.stat().st_size
        return SnapshotChunk(path=path, offset=offset, data=base64.b64encode(data).decode(), eof=end)

    def drop(self) -> bool:
        if not self.root.exists():
            return False
        shutil.rmtree(self.root)
        return True

    # --- copying ------------------------------------------------------------------------------

    def _memory(self) -> str | None:
        """memory.db through the online backup API; its schema version, or None without one."""
        source_path = self.data_dir / MEMORY_DB
        if not source_path.is_file() or source_path.is_symlink():
            return None
        target_path = self.root / MEMORY_DB
        try:
            source = sqlite3.connect(source_path, timeout=30.0)
            try:
                target = sqlite3.connect(target_path)
                try:
                    source.backup(target)
                    row = target.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                except sqlite3.OperationalError:
                    row = None
                finally:
                    target.close()
            finally:
                source.close()
        except sqlite3.DatabaseError as failed:
            raise SnapshotError(f"memory.db cannot be copied: {failed}") from None
        return str(row[0]) if row else None

    def _folder(self, relative: str) -> None:
        source_root = self.data_dir / relative
        if source_root.is_symlink() or not source_root.is_dir():
            return
        for dirpath, dirnames, filenames in os.walk(source_root):
            # Links are skipped, never followed: they would point anywhere in the container.
            dirnames[:] = [d for d in dirnames if not (Path(dirpath) / d).is_symlink()]
            for name in filenames:
                source = Path(dirpath) / name
                self._file(source, self.root / source.relative_to(self.data_dir))

    def _file(self, source: Path, target: Path) -> None:
        if source.is_symlink() or not source.is_file() or source.name.endswith(".tmp"):
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        data = source.read_bytes()
        if source.suffix in (".jsonl", ".md") and data and not data.endswith(b"\n"):
            # An append in progress: keep what was complete.
            data = data[: data.rfind(b"\n") + 1]
        target.write_bytes(data)

    def _describe(self, path: Path) -> SnapshotFile:
        digest = hashlib.sha256()
        with path.open("rb") as source:
            for block in iter(lambda: source.read(CHUNK_BYTES), b""):
                digest.update(block)
        return SnapshotFile(
            path=path.relative_to(self.root).as_posix(), size=path.stat().st_size, sha256=digest.hexdigest()
        )

    def _inside(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root.resolve()) or not target.is_file():
            raise SnapshotError(f"{path!r} is not a file of the snapshot")
        return target

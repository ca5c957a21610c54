"""Snapshots of the agent's own files, taken by the agent for the orchestrator's backups.

The orchestrator never opens a path in the agent's storage, so a backup asks the agent: the
agent copies what only it holds into a snapshot folder of its own storage (memory.db with
SQLite's online backup API, so the copy is consistent while the agent works; history,
learnings and daily logs as they are, append-only files cut at their last complete line), then
hands the files over in capped chunks and deletes the snapshot when told.

    snapshot.take                        -> SnapshotListing
    snapshot.read {"path", "offset"}     -> SnapshotChunk (at most CHUNK_BYTES of data)
    snapshot.drop                        -> {"dropped": bool}

An agent that is stopped cannot answer: the same code then runs without the agent, in a
throwaway unit of the agent's image with its storage mounted read-only, and writes the whole
snapshot to stdout as JSON lines (the listing, then each file's chunks in order):

    python -m agent_runtime.workspace.snapshot DATA_DIR SCRATCH_DIR
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import sys
from pathlib import Path
from typing import BinaryIO

from agent_runtime import sqlite_driver
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

    def __init__(self, data_dir: Path, scratch: Path | None = None) -> None:
        """`scratch`: where the snapshot is made when the storage is read-only (the agent is
        stopped); by default a folder of the storage itself."""
        self.data_dir = data_dir
        self.read_only = scratch is not None
        self.root = scratch / "snapshot" if scratch is not None else data_dir / SNAPSHOT_DIR

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
        if self.read_only:
            source_path = self._writable_copy(source_path)
        try:
            source = sqlite_driver.connect(source_path, timeout=30.0)
            try:
                target = sqlite_driver.connect(target_path)
                try:
                    source.backup(target)
                    row = target.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                except sqlite_driver.OperationalError:
                    row = None
                finally:
                    target.close()
            finally:
                source.close()
        except sqlite_driver.DatabaseError as failed:
            raise SnapshotError(f"memory.db cannot be copied: {failed}") from None
        finally:
            if self.read_only:
                shutil.rmtree(source_path.parent, ignore_errors=True)
        return str(row[0]) if row else None

    def _writable_copy(self, source: Path) -> Path:
        """memory.db and its WAL copied beside the snapshot: SQLite cannot open a WAL database
        on a read-only mount, and the WAL may hold the last commits of an agent that crashed."""
        copy = self.root.parent / "source" / MEMORY_DB
        copy.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal"):
            original = source.with_name(source.name + suffix)
            if original.is_file() and not original.is_symlink():
                shutil.copyfile(original, copy.with_name(copy.name + suffix))
        return copy

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


def write_stream(snapshots: Snapshots, out: BinaryIO) -> None:
    """The whole snapshot as JSON lines: the listing, then every file's chunks in order."""
    listing = snapshots.take()
    out.write(listing.model_dump_json().encode() + b"\n")
    for entry in listing.files:
        offset = 0
        while True:
            chunk = snapshots.read(entry.path, offset)
            out.write(chunk.model_dump_json().encode() + b"\n")
            offset += len(base64.b64decode(chunk.data))
            if chunk.eof or not chunk.data:
                break
    out.flush()


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m agent_runtime.workspace.snapshot DATA_DIR SCRATCH_DIR", file=sys.stderr)
        return 2
    snapshots = Snapshots(Path(argv[0]), scratch=Path(argv[1]))
    try:
        write_stream(snapshots, sys.stdout.buffer)
    except (SnapshotError, OSError) as failed:
        print(f"snapshot failed: {failed}", file=sys.stderr)
        return 1
    finally:
        snapshots.drop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

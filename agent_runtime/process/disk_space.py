"""The agent's own disk (/data): how much is free, whether it is full, and what the agent may
free at once when it is (standard library only).

The disk counts as full when a write failed for want of space, or when less than
`LOW_SPACE_BYTES` is left; it counts as free again once twice that is left, so a disk at the
edge does not flap between the two. While it is full the agent keeps answering: writes that
only keep a record (history, daily log, run records) are skipped with a warning, and the answer
still goes back to the orchestrator, which holds the item until then.

What the agent may free by itself is what it can rebuild or never needs: leftover temporary
files of cut writes and the folder of a snapshot that never finished (untouched for
`LEFTOVER_AFTER_S`, so a write or snapshot in flight keeps its own). History, memory and the
operator's kept files (`damaged/`) are not touched here: the `rotation` maintenance job
compacts and prunes history by its rule, and it is started at once when the disk fills.

A small reserve (`RESERVE_BYTES`, a plain file under `.runtime/`) is kept while there is room:
when a record (a turn of the history log, the processed log) finds the disk full, a piece of
the reserve is given back to the filesystem and the record is written in its place, so the
turns answered on a full disk are still in the history. The reserve is filled up again once
the disk has room.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from agent_runtime import sqlite_driver

log = logging.getLogger("agent_runtime")

LOW_SPACE_BYTES = 512 * 1024
LEFTOVER_AFTER_S = 300.0
"""A temporary file or snapshot folder untouched this long belongs to no write in flight."""
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
RESERVE_BYTES = 1024 * 1024
RESERVE_PIECE_BYTES = 16 * 1024
"""What one record at a full disk takes back from the reserve at least (a filesystem frees
whole blocks, and a turn with a long tool result can hold several)."""
RESERVE_FILE = Path(".runtime") / "space-reserve"


def is_disk_full(exc: BaseException) -> bool:
    """True for a write refused for want of space (OS or SQLite), False for any other failure."""
    if isinstance(exc, (sqlite3.Error, sqlite_driver.Error)):
        code = getattr(exc, "sqlite_errorcode", None)
        return code == sqlite3.SQLITE_FULL or "disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS


@dataclass(frozen=True)
class DiskReading:
    free_bytes: int | None
    full: bool


class DiskSpace:
    """Watches the free space of the agent's data folder; thread-safe."""

    def __init__(self, data_dir: Path, low_bytes: int = LOW_SPACE_BYTES) -> None:
        self.data_dir = data_dir
        self.low_bytes = low_bytes
        self._lock = threading.Lock()
        self._full = False

    def free_bytes(self) -> int | None:
        try:
            return shutil.disk_usage(self.data_dir).free
        except OSError:
            return None

    def note_failed_write(self, what: str, failed: BaseException) -> None:
        """A write failed with ENOSPC: the disk is full until a reading shows room again."""
        log.warning("%s was not written: the agent's disk is full (%s)", what, failed)
        with self._lock:
            self._full = True

    @property
    def reserve_path(self) -> Path:
        return self.data_dir / RESERVE_FILE

    def reserve_bytes(self) -> int:
        try:
            return self.reserve_path.stat().st_size
        except OSError:
            return 0

    def keep_reserve(self) -> None:
        """Fill the reserve up to `RESERVE_BYTES` when the disk has room for it and more; a
        top-up that finds the disk full is cut back to what was there."""
        held = self.reserve_bytes()
        missing = RESERVE_BYTES - held
        free = self.free_bytes()
        if missing <= 0 or free is None or free < missing + 2 * self.low_bytes:
            return
        with self._lock:
            try:
                self.reserve_path.parent.mkdir(parents=True, exist_ok=True)
                with self.reserve_path.open("ab") as reserve:
                    reserve.write(b"\0" * missing)
                    reserve.flush()
                    os.fsync(reserve.fileno())
            except OSError as failed:
                log.warning("the space reserve was not filled up: %s", failed)
                with contextlib.suppress(OSError):
                    os.truncate(self.reserve_path, held)

    def release_reserve(self, needed: int = RESERVE_PIECE_BYTES) -> bool:
        """Give back at least `needed` bytes of the reserve to the filesystem, for a record the
        full disk refused; False when the reserve is used up."""
        with self._lock:
            held = self.reserve_bytes()
            if held <= 0:
                return False
            keep = max(held - max(needed, RESERVE_PIECE_BYTES), 0)
            try:
                os.truncate(self.reserve_path, keep)
            except OSError as failed:
                log.warning("the space reserve could not be used: %s", failed)
                return False
        log.warning("the disk is full: %d bytes of the space reserve used for a record", held - keep)
        return True

    def read(self) -> DiskReading:
        free = self.free_bytes()
        with self._lock:
            if free is not None and free < self.low_bytes:
                self._full = True
            elif free is not None and free >= 2 * self.low_bytes:
                self._full = False
            return DiskReading(free, self._full)

    @staticmethod
    def _snapshot_running(snapshot: Path) -> bool:
        try:
            return time.time() - snapshot.stat().st_mtime < LEFTOVER_AFTER_S
        except OSError:
            return False

    def free_what_rules_allow(self) -> int:
        """Removes what the agent can rebuild or never needs; the bytes freed."""
        from agent_runtime.process.storage_check import SNAPSHOT_FOLDER, remove_leftover_temp_files

        before = self.free_bytes() or 0
        snapshot = self.data_dir / SNAPSHOT_FOLDER
        if snapshot.is_dir() and not snapshot.is_symlink() and not self._snapshot_running(snapshot):
            shutil.rmtree(snapshot, ignore_errors=True)
        removed = remove_leftover_temp_files(self.data_dir, older_than_s=LEFTOVER_AFTER_S)
        freed = max((self.free_bytes() or 0) - before, 0)
        log.warning("disk full: freed %d bytes (%d leftover file(s) removed)", freed, len(removed))
        return freed

"""Copy the WAL back into the database file from a thread of its own, off the writer's path.

SQLite's automatic checkpoint runs inside the COMMIT that crosses the threshold, so one insert in
every few dozen pays for copying everyone's pages (and the fsync): that is the slowest insert. A
PASSIVE checkpoint on a second connection does the same work without blocking the writer, and
the sqlite3 module releases the GIL while it runs. The thread sleeps while nothing is written,
so an idle agent does not wake for it.

The writer keeps a large automatic threshold as a backstop: should this thread fall behind
(a reader holding an old snapshot for long), the WAL still cannot grow without bound.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from agent_runtime.memory.sqlite import Connection, OperationalError, connect

log = logging.getLogger(__name__)

# Wait this long after a write before checkpointing: a burst of inserts shares one checkpoint.
BATCH_S = 0.1


class Checkpointer:
    def __init__(self, path: Path, batch_s: float = BATCH_S) -> None:
        self.path = path
        self.batch_s = batch_s
        self._written = threading.Event()
        self._stopping = threading.Event()
        self._conn: Connection | None = None
        self.lock = threading.Lock()
        """Held while this thread checkpoints: a caller's own checkpoint takes it to not collide."""
        self.runs = 0
        """Checkpoints done so far."""
        self._thread = threading.Thread(target=self._run, name=f"checkpoint-{path.name}", daemon=True)
        self._thread.start()

    def written(self) -> None:
        """A write transaction committed: its pages are in the WAL."""
        self._written.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._stopping.set()
        self._written.set()
        self._thread.join()

    def _run(self) -> None:
        try:
            self._conn = connect(self.path, cache_mb=1, mmap_mb=0)
            while not self._stopping.is_set():
                self._written.wait()
                if self._stopping.wait(self.batch_s):
                    break
                self._written.clear()
                self._checkpoint()
        except OperationalError as failed:
            # The writer's automatic checkpoint still runs: slower inserts, nothing lost.
            log.warning("background checkpoints of %s stopped: %s", self.path, failed)
        finally:
            if self._conn is not None:
                self._conn.close()

    def _checkpoint(self) -> None:
        assert self._conn is not None
        try:
            with self.lock:
                self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.runs += 1
        except OperationalError as busy:
            # Another checkpoint is running (a writer's backstop): the next write brings us back.
            log.debug("checkpoint of %s skipped: %s", self.path, busy)

"""What the agent process is doing right now, shared by the work loop and the check-in thread."""

from __future__ import annotations

import os
import threading
import time
from datetime import datetime
from typing import Literal

from agent_runtime.protocol import CheckIn, ContextStatus
from agent_runtime.transport.boot import STARTED_ENV, TURNS_ENV

ProcessState = Literal["starting", "idle", "busy", "stopping"]
MemoryMode = Literal["hybrid", "keyword", "unknown"]


def rss_bytes() -> int | None:
    """Resident set size from /proc (Linux); None elsewhere."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            resident_pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


class RuntimeState:
    """Thread-safe snapshot source for check-ins; `changed` wakes the check-in thread early.

    Uptime and turns carry over an in-place restart (see `AgentProcess.release`) through two
    environment variables; the monotonic clock is the same across exec.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started = _float_env(STARTED_ENV, time.monotonic())
        self.changed = threading.Event()
        self.state: ProcessState = "starting"
        self.current_item: str | None = None
        self.turns = int(_float_env(TURNS_ENV, 0))
        self.context: ContextStatus | None = None
        self.memory_mode: MemoryMode = "unknown"
        self.memory_problem: str | None = None
        self.memory_due_at: datetime | None = None
        self.disk_free_bytes: int | None = None
        self.disk_full = False

    def set_state(self, state: ProcessState, current_item: str | None = None) -> None:
        with self._lock:
            self.state = state
            self.current_item = current_item
        self.changed.set()

    def add_turns(self, count: int) -> None:
        with self._lock:
            self.turns += count

    def set_context(self, status: ContextStatus) -> None:
        with self._lock:
            self.context = status

    def set_memory_due(self, at: datetime | None) -> None:
        with self._lock:
            self.memory_due_at = at

    def set_disk(self, free_bytes: int | None, full: bool) -> None:
        with self._lock:
            changed = full != self.disk_full
            self.disk_free_bytes, self.disk_full = free_bytes, full
        if changed:
            self.changed.set()

    def set_memory_mode(self, mode: MemoryMode) -> None:
        with self._lock:
            self.memory_mode = mode

    def carry_over(self) -> dict[str, str]:
        """Environment for the next incarnation of this process."""
        with self._lock:
            return {STARTED_ENV: repr(self._started), TURNS_ENV: str(self.turns)}

    def snapshot(self) -> CheckIn:
        with self._lock:
            return CheckIn(
                state=self.state,
                pid=os.getpid(),
                uptime_s=round(time.monotonic() - self._started, 3),
                rss_bytes=rss_bytes(),
                turns=self.turns,
                current_item=self.current_item,
                context=self.context,
                memory_mode=self.memory_mode,
                memory_problem=self.memory_problem,
                memory_due_at=self.memory_due_at,
                disk_free_bytes=self.disk_free_bytes,
                disk_full=self.disk_full,
            )


def _float_env(name: str, default: float) -> float:
    try:
        return float(os.environ[name])
    except (KeyError, ValueError):
        return default

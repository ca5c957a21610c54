"""Run records on their way to the orchestrator: each is sent until the orchestrator has it.

A run record leaves after the item's answer. When the orchestrator is unreachable or restarting
at that moment (killed between the two), the record is kept here and sent again before the
next item and on every turn of the work loop, until it is acknowledged. The orchestrator keys a
record by its run id and stores it once, so sending it again is harmless. A record the
orchestrator refuses (a 4xx other than "too many") is dropped with a warning: sending it again
would be refused again.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable

from agent_runtime.protocol import RunRecord
from agent_runtime.transport.errors import OrchestratorError, OrchestratorRefused

log = logging.getLogger(__name__)

UNSENT_RUNS_KEPT = 1000
"""Records kept while the orchestrator is away; the oldest go first beyond it."""
TOO_MANY_REQUESTS = 429


class UnsentRuns:
    """The run records not yet acknowledged, oldest first; thread-safe."""

    def __init__(self, send: Callable[[RunRecord], None], kept: int = UNSENT_RUNS_KEPT) -> None:
        self._send = send
        self._runs: deque[RunRecord] = deque()
        self._kept = kept
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._runs)

    def add(self, run: RunRecord) -> None:
        with self._lock:
            if len(self._runs) >= self._kept:
                lost = self._runs.popleft()
                log.warning("run record %s of item %s dropped: too many unsent", lost.id, lost.item_id)
            self._runs.append(run)

    def send(self) -> int:
        """Send what is kept, oldest first, until one fails; the records still unsent."""
        with self._lock:
            while self._runs:
                run = self._runs[0]
                try:
                    self._send(run)
                except OrchestratorRefused as refused:
                    if refused.status == TOO_MANY_REQUESTS:
                        break
                    log.warning("run record for %s refused: %s", run.item_id, refused)
                except OrchestratorError as failed:
                    log.info(
                        "run record for %s not sent yet (%d waiting): %s",
                        run.item_id,
                        len(self._runs),
                        failed,
                    )
                    break
                self._runs.popleft()
            return len(self._runs)

"""The check-in thread: reports the agent's state every few seconds and on every change."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from agent_runtime.health import READY_FILE
from agent_runtime.process.state import RuntimeState
from agent_runtime.transport.client import OrchestratorClient
from agent_runtime.transport.errors import OrchestratorError

log = logging.getLogger(__name__)

CHECKIN_INTERVAL_S = 10.0


def touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="ascii"):
        pass
    os.utime(path)


class CheckInThread(threading.Thread):
    """Touches the alive file and posts a CheckIn; tells `on_config_hash` what the orchestrator holds."""

    def __init__(
        self,
        client: OrchestratorClient,
        state: RuntimeState,
        alive_file: Path,
        on_config_hash: Callable[[str], None],
        interval_s: float = CHECKIN_INTERVAL_S,
    ) -> None:
        super().__init__(name="checkin", daemon=True)
        self.client = client
        self.state = state
        self.alive_file = alive_file
        self.on_config_hash = on_config_hash
        self.interval_s = interval_s
        self._stop_requested = threading.Event()

    def stop(self) -> None:
        self._stop_requested.set()
        self.state.changed.set()

    def run(self) -> None:
        while not self._stop_requested.is_set():
            self.state.changed.clear()
            self.beat()
            self.state.changed.wait(self.interval_s)

    def beat(self) -> None:
        try:
            touch(self.alive_file)
        except OSError as failed:
            log.warning("cannot touch %s: %s", self.alive_file, failed)
        try:
            reply = self.client.checkin(self.state.snapshot())
        except OrchestratorError as failed:
            log.warning("check-in failed: %s", failed)
            return
        try:
            touch(self.alive_file.with_name(READY_FILE))
        except OSError as failed:
            log.warning("cannot touch %s: %s", self.alive_file.with_name(READY_FILE), failed)
        self.on_config_hash(reply.config_hash)

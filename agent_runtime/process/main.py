"""The agent's entry point: settings, signals, reporting in, then the runtime.

Reporting in (`agent_runtime.transport.boot`) needs only the standard library; the runtime
(`agent_runtime.process.agent`) is imported after it, so the orchestrator sees a new agent up before
the agent has loaded pydantic and its channel.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType

from agent_runtime.process.collector import collector_paused
from agent_runtime.process.settings import Settings, SettingsError, read_token
from agent_runtime.transport.boot import report_in

log = logging.getLogger("agent_runtime")


def _install_signal_handlers(stopping: threading.Event) -> None:
    def handle(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s", signal.Signals(signum).name)
        stopping.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def main() -> int:
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        settings = Settings.from_env()
        read_token(settings.token_file)  # there from the start: written before the agent starts
    except SettingsError as bad:
        log.error("%s", bad)
        return 2
    stopping = threading.Event()
    _install_signal_handlers(stopping)
    config_json = report_in(settings, stopping)
    if config_json is None:
        return 0 if stopping.is_set() else 1
    with collector_paused():
        from agent_runtime.process.agent import AgentProcess

    return AgentProcess(settings, stopping).run(config_json)

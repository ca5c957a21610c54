"""An agent's first words to the orchestrator, with the standard library only.

A new agent process fetches its config and reports in before it loads the rest of its runtime
(pydantic, the wire models, the channel: about 0.15 CPU-s, 0.3 s under the default 0.5-CPU
limit), so the orchestrator sees it up that much sooner. These two calls are the plain HTTP
routes `GET /agent/v1/config` and `POST /agent/v1/checkin`, made by the standard-library part of
the agent's client (`agent_runtime.transport.base_client`); the runtime validates the config
with the wire models once they are loaded, and everything after goes over the agent channel.
"""

from __future__ import annotations

import http
import logging
import os
import threading
import time

from agent_runtime.backoff import Backoff
from agent_runtime.health import READY_FILE
from agent_runtime.process.settings import Settings, SettingsError
from agent_runtime.transport.base_client import BaseClient
from agent_runtime.transport.httpclient import HttpError

log = logging.getLogger("agent_runtime")

BACKOFF_START_S = 0.5
BACKOFF_MAX_S = 15.0
GONE = 410
# The process's start, carried over an in-place restart (see agent_runtime.process.state).
STARTED_ENV = "FLOTILLA_RUNTIME_STARTED"
TURNS_ENV = "FLOTILLA_RUNTIME_TURNS"


def report_in(settings: Settings, stopping: threading.Event) -> bytes | None:
    """The agent's config (JSON, as served), asked for until the orchestrator answers, followed
    by a first check-in. None when stopping first, or when the orchestrator no longer knows this
    agent."""
    backoff = Backoff(BACKOFF_START_S, BACKOFF_MAX_S)
    _make_own_folders(settings)
    client = BaseClient(settings.orchestrator_url, settings.token_file)
    try:
        while not stopping.is_set():
            try:
                client.reread_token()  # read each time: it may have been rotated
                answer = client.config_over_http()
            except SettingsError as unreadable:
                log.warning("%s; retrying", unreadable)
            except HttpError as failed:
                log.info("orchestrator not answering yet: %s", failed)
            else:
                if answer.status == http.HTTPStatus.OK:
                    _note_alive(settings)
                    _first_checkin(client, settings)
                    return answer.body
                if answer.status == GONE:
                    log.error("the orchestrator no longer knows this agent: %s", answer.message())
                    return None
                log.warning("config refused (HTTP %d), retrying: %s", answer.status, answer.message())
            stopping.wait(backoff.next())
        return None
    finally:
        client.close()


OWN_FOLDERS = ("workspace", "workspace/memory", "workspace/learnings", "history", ".runtime")


def _make_own_folders(settings: Settings) -> None:
    """The agent's storage starts empty: its folders are made by the agent itself."""
    for folder in OWN_FOLDERS:
        try:
            (settings.data_dir / folder).mkdir(parents=True, exist_ok=True)
        except OSError as failed:
            log.warning("cannot make %s: %s", folder, failed)


def _note_alive(settings: Settings) -> None:
    """The liveness probe's file is fresh from the first check-in on, which the orchestrator may
    already count as healthy; the check-in thread keeps it fresh once the runtime is loaded."""
    try:
        settings.alive_file.touch()
    except OSError as failed:
        log.warning("cannot touch %s: %s", settings.alive_file, failed)


def _first_checkin(client: BaseClient, settings: Settings) -> None:
    """A best effort: the check-in thread reports again as soon as the runtime is loaded. Once
    the orchestrator accepts it the agent is ready (it may already count it healthy), so the
    readiness probe's file is fresh from here on, not only from the thread's first beat."""
    started = float(os.environ.get(STARTED_ENV) or time.monotonic())
    checkin = {
        "state": "starting",
        "pid": os.getpid(),
        "uptime_s": round(time.monotonic() - started, 3),
        # Carried over an in-place restart: turns > 0 tells the orchestrator that this agent
        # is back from an idle release, not new, and takes messages again in a moment.
        "turns": _carried_turns(),
    }
    try:
        answer = client.checkin_over_http(checkin)
    except HttpError as failed:
        log.info("first check-in failed: %s", failed)
        return
    if answer.status != http.HTTPStatus.OK:
        log.info("first check-in refused (HTTP %d): %s", answer.status, answer.message())
        return
    try:
        settings.alive_file.with_name(READY_FILE).touch()
    except OSError as failed:
        log.warning("cannot touch the readiness file: %s", failed)


def _carried_turns() -> int:
    try:
        return max(int(os.environ.get(TURNS_ENV) or 0), 0)
    except ValueError:
        return 0

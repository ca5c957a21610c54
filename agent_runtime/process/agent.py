"""The agent process once it has reported in (see `agent_runtime.transport.boot`): check in, long-poll
the inbox, work each item.

Only the standard library, pydantic, websockets and the wire models are imported here; the
worker (model client, tools, memory store) is imported when the first item arrives, so an idle
agent stays small.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent_runtime.backoff import Backoff
from agent_runtime.process.collector import collector_paused
from agent_runtime.process.disk_space import DiskSpace
from agent_runtime.process.settings import Settings
from agent_runtime.process.state import RuntimeState
from agent_runtime.process.storage_check import MEMORY_DAMAGED_EVENT, check_own_storage
from agent_runtime.protocol import (
    AgentEvent,
    AgentRuntimeConfig,
    InboxItem,
    WorkspaceWrite,
    WorkspaceWriteResult,
)
from agent_runtime.transport.boot import BACKOFF_MAX_S, BACKOFF_START_S, GONE
from agent_runtime.transport.checkin import CheckInThread
from agent_runtime.transport.client import OrchestratorClient
from agent_runtime.transport.errors import OrchestratorError, OrchestratorRefused, OrchestratorStorageFull
from agent_runtime.workspace.versioned import (
    CAPS,
    Author,
    CapExceeded,
    InvalidContent,
    ReadOnlyFile,
    WorkspaceError,
)

if TYPE_CHECKING:
    from agent_runtime.work.worker import Worker

log = logging.getLogger("agent_runtime")

LONG_POLL_S = 25.0
MIN_POLL_S = 1.0
STOP_GRACE_S = 8.0
MAINTENANCE_EVERY_S = 60.0
WORKER_MODULE = "agent_runtime.work.worker"


class AgentProcess:
    def __init__(self, settings: Settings, stopping: threading.Event) -> None:
        """`stopping` is set by the signal handlers (installed before the runtime loaded)."""
        self.settings = settings
        self.client = OrchestratorClient(settings.orchestrator_url, settings.token_file)
        self.state = RuntimeState()
        self.disk = DiskSpace(settings.data_dir)
        self.stopping = stopping
        self.config: AgentRuntimeConfig | None = None
        self._config_stale = threading.Event()
        self._worker: Worker | None = None
        self._last_work = time.monotonic()
        self._next_due_check = 0.0
        self.crashed = False

    def request_stop(self) -> None:
        self.stopping.set()

    def _check_storage(self) -> None:
        """Leftover temp files removed; a damaged memory.db set aside, reported and shown in ps."""
        check = check_own_storage(self.settings.data_dir)
        if check.fresh_store is not None:
            self.state.memory_problem = check.fresh_store.describe()
        if check.memory_problem is None:
            return
        event = AgentEvent(
            type=MEMORY_DAMAGED_EVENT, data={"problem": check.memory_problem, "kept_aside": check.kept_aside}
        )
        try:
            self.client.event(event)
        except OrchestratorError as failed:
            log.warning("could not report the damaged memory.db: %s", failed)

    def _on_config_hash(self, config_hash: str) -> None:
        if self.config is not None and config_hash != self.config.config_hash:
            self._config_stale.set()

    def run(self, config_json: bytes) -> int:
        """Serve until stopped, from the config the boot step fetched; the exit status."""
        try:
            config = AgentRuntimeConfig.model_validate_json(config_json)
        except ValidationError as bad:
            log.error("the orchestrator sent a config this runtime cannot use: %s", bad)
            return 1
        self.config = config
        self.client.use_limits(config)
        log.info("agent %s of fleet %s started (model %s)", config.agent, config.fleet, config.model)
        self._check_storage()
        self._watch_disk()
        self._serve_orchestrator()
        checkin = CheckInThread(self.client, self.state, self.settings.alive_file, self._on_config_hash)
        self.state.set_state("idle")
        checkin.start()
        work = threading.Thread(target=self._work_thread, name="work", daemon=True)
        work.start()
        self.stopping.wait()
        self._shutdown(work, checkin)
        return 1 if self.crashed else 0

    def _serve_orchestrator(self) -> None:
        """Before the channel opens: who answers the orchestrator's requests, and where this
        agent's workspace writes go (the orchestrator's copy is the truth)."""
        from agent_runtime.transport.serving import AgentService
        from agent_runtime.workspace.restore import restart_in_place_soon
        from agent_runtime.workspace.versioned import write_through

        self.client.channel.serve(
            AgentService(
                self.settings,
                lambda: self.config,
                lambda: self.client.token,
                job_runners=self._job_runners,
                restart=lambda: restart_in_place_soon(self.client.channel.retire),
                forgotten_in_worker=self._forgotten_in_worker,
            )
        )
        write_through(self.settings.data_dir, self._write_workspace)

    def _write_workspace(self, name: str, content: str, author: Author, reason: str) -> WorkspaceWriteResult:
        write = WorkspaceWrite(content=content, author="job" if author == "job" else "agent", reason=reason)
        try:
            return self.client.write_workspace(name, write)
        except OrchestratorRefused as refused:
            # The same errors as a local write, so callers that handle a full file still do.
            if refused.status == 413:
                raise CapExceeded(name, len(content.encode("utf-8")), CAPS.get(name) or 0) from None
            if refused.status == 403:
                raise ReadOnlyFile(name, author) from None
            if refused.status == 422:
                raise InvalidContent(name, str(refused)) from None
            raise WorkspaceError(str(refused)) from None
        except OrchestratorStorageFull as full:
            raise WorkspaceError(
                f"{name} was not written: the orchestrator's disk is full: {full.message}"
            ) from None
        except OrchestratorError as failed:
            raise WorkspaceError(
                f"{name} was not written: the orchestrator cannot be reached ({failed})"
            ) from None

    def _work_thread(self) -> None:
        """Run the work loop; if it dies on an unexpected error, stop the process so the
        supervisor restarts it (the traceback goes to the log, the item is redelivered)."""
        try:
            self.work_loop()
        except Exception:
            # Logged here, before the stop is requested: the process may exit right after.
            log.exception("the work loop failed")
        finally:
            if not self.stopping.is_set():
                self.crashed = True
                log.error("the work loop stopped unexpectedly: exiting so the agent is restarted")
                self.request_stop()

    def _shutdown(self, work: threading.Thread, checkin: CheckInThread) -> None:
        busy = self.state.current_item is not None and not self.crashed
        if busy:
            log.info("stopping: giving the current item %.0fs to finish", STOP_GRACE_S)
            work.join(STOP_GRACE_S)
            if work.is_alive():
                log.warning(
                    "stopping with item %s unfinished: it will be redelivered", self.state.current_item
                )
        self.state.set_state("stopping")
        checkin.stop()
        checkin.beat()

    def work_loop(self) -> None:
        backoff = Backoff(BACKOFF_START_S, BACKOFF_MAX_S)
        last_maintenance = time.monotonic()
        while not self.stopping.is_set():
            if self._worker is not None and time.monotonic() - last_maintenance >= MAINTENANCE_EVERY_S:
                last_maintenance = time.monotonic()
                self._worker.maintain()
                self._note_memory_due()
            elif self._worker is None and time.monotonic() >= self._next_due_check:
                # An idle agent stays small: it reads when its jobs are due, and starts its
                # worker (which runs them) only when one is.
                self._next_due_check = time.monotonic() + MAINTENANCE_EVERY_S
                if self._memory_jobs_due():
                    log.info("memory jobs due by their schedule: running them")
                    self._last_work = time.monotonic()
                    self.worker().maintain()
                    self._note_memory_due()
            if self._should_release():
                self.release()
            if self._config_stale.is_set():
                self._reload_config()
            self._watch_disk()
            if self._worker is not None:
                self._worker.unsent_runs.send()
            try:
                item = self.client.next_item(self._poll_wait_s())
            except OrchestratorRefused as refused:
                if refused.status == GONE:
                    log.error("removed from the fleet: stopping")
                    self.request_stop()
                    return
                log.warning("inbox refused: %s", refused)
                self.stopping.wait(backoff.next())
                continue
            except OrchestratorError as failed:
                log.warning("inbox unavailable: %s", failed)
                self.stopping.wait(backoff.next())
                continue
            backoff.reset()
            if item is None or self.stopping.is_set():
                continue
            self._handle(item)

    def _memory_jobs_due(self) -> bool:
        """True when a memory job is due by its schedule now; notes the next due time for the
        check-ins either way (the orchestrator wakes a hibernated agent then)."""
        due_at = self._note_memory_due()
        return due_at is not None and due_at <= datetime.now(UTC)

    def _note_memory_due(self) -> datetime | None:
        from agent_runtime.jobs_due import next_due_at

        config = self.config
        if config is None:
            return None
        try:
            due_at = next_due_at(self.settings.data_dir, config.context, datetime.now(UTC))
        except (OSError, ValueError) as failed:
            log.warning("when the memory jobs are due could not be read: %s", failed)
            return None
        self.state.set_memory_due(due_at)
        return due_at

    def _poll_wait_s(self) -> float:
        """The long-poll's length, cut short so that an idle release happens on time."""
        if self._worker is None or self.settings.idle_release_s <= 0:
            return LONG_POLL_S
        until_release = self.settings.idle_release_s - (time.monotonic() - self._last_work)
        return min(LONG_POLL_S, max(until_release, MIN_POLL_S))

    def _should_release(self) -> bool:
        worker = self._worker
        if worker is None or self.settings.idle_release_s <= 0 or self.stopping.is_set():
            return False
        idle_for = time.monotonic() - self._last_work
        # Run records not yet sent live in the worker's memory: it is kept until they are.
        unsent = len(worker.unsent_runs) > 0
        return idle_for >= self.settings.idle_release_s and not worker.busy_in_background() and not unsent

    def release(self) -> None:
        """Give back the worker's memory by restarting in place: same pid, fresh interpreter.

        Python cannot unload the model client, the memory store and the tools once imported;
        exec brings the process back to its idle size. Context and processed items are on disk,
        and nothing is claimed from the inbox at this point.
        """
        log.info(
            "idle for %.0fs: restarting in place to release the worker's memory", self.settings.idle_release_s
        )
        # The orchestrator holds its requests for the next process rather than lose them here.
        self.client.channel.retire()
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stderr.flush()
        sys.stdout.flush()
        os.execve(sys.executable, sys.orig_argv, {**os.environ, **self.state.carry_over()})

    def _reload_config(self) -> None:
        try:
            config = self.client.get_config(reload=True)
        except OrchestratorError as failed:
            log.warning("config changed but could not be fetched: %s", failed)
            return
        self._config_stale.clear()
        self.config = config
        self.client.use_limits(config)
        if self._worker is not None:
            self._worker.reconfigure(config)
        log.info("configuration reloaded (%s)", config.config_hash)

    def _handle(self, item: InboxItem) -> None:
        if (
            item.config_hash is not None
            and self.config is not None
            and item.config_hash != self.config.config_hash
        ):
            self._reload_config()
        self.state.set_state("busy", item.id)
        try:
            self.worker().process(item)
        finally:
            self._last_work = time.monotonic()
            self._watch_disk()
            self.state.set_state("idle")

    def _watch_disk(self) -> None:
        """Tell the check-ins how much space is left; when the disk has just filled, free what
        the agent's rules allow at once (the history rotation job among it)."""
        was_full = self.state.disk_full
        reading = self.disk.read()
        if reading.full and not was_full:
            log.warning(
                "the agent's disk is full (%s bytes free): freeing what can be freed", reading.free_bytes
            )
            self.disk.free_what_rules_allow()
            self._start_rotation()
            reading = self.disk.read()
        elif was_full and not reading.full:
            log.info("the agent's disk has room again (%s bytes free)", reading.free_bytes)
        if not reading.full:
            self.disk.keep_reserve()
        self.state.set_disk(reading.free_bytes, reading.full)

    def _start_rotation(self) -> None:
        runner = self._worker.memory.maintenance if self._worker is not None else None
        if runner is not None and "rotation" in runner.jobs:
            runner.start("rotation", "disk_full")

    def _job_runners(self) -> tuple[Any, Any] | None:
        """The started worker's memory job runners, which call its models; None before."""
        worker = self._worker
        return (worker.memory.maintenance, worker.cognition) if worker is not None else None

    def _forgotten_in_worker(self, texts: list[str]) -> bool:
        """The running worker rewrites the copies of an operator's forget; False before it starts."""
        worker = self._worker
        if worker is None:
            return False
        worker.forget_copies(texts)
        return True

    def worker(self) -> Worker:
        if self._worker is None:
            # Paused and frozen on the first load only: each freeze would keep for good whatever
            # cycles of objects happened to be alive at that moment.
            if WORKER_MODULE not in sys.modules:
                with collector_paused():
                    importlib.import_module(WORKER_MODULE)
            from agent_runtime.work.worker import Worker

            assert self.config is not None
            self._worker = Worker(self.settings, self.config, self.client, self.state, disk=self.disk)
        return self._worker

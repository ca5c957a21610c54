"""The orchestrator process: bind, reconcile, supervise, schedule and serve the API.

It listens on loopback for the CLI and the dashboard, and on the fleet network's gateway
address for agents. Stopping it leaves the agents running; the next start adopts them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from datetime import timedelta

import uvicorn

from agent_runtime.protocol import utcnow
from orchestrator.alerts import AlertDispatcher, AlertStore
from orchestrator.api.app import create_app
from orchestrator.api.operator.events import close_streams
from orchestrator.backup.fleet_backups import link_asker, scheduled_backups, stopped_snapshots
from orchestrator.backup.link_restore import LinkRestores
from orchestrator.broker import keep_messages_in_step
from orchestrator.config.units import parse_duration
from orchestrator.conversations.service import ChatService
from orchestrator.fleet.reconcile import ApplyResult
from orchestrator.listeners import Listeners
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.telemetry.tracing import trace_export
from orchestrator.workflows.service import WorkflowService
from orchestrator.workflows.spans import otlp_run_spans
from orchestrator.workflows.triggers import WorkflowTriggers
from orchestrator.workspaces.watcher import WorkspaceWatcher

log = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN_S = 3


def _load_token_table() -> None:
    from orchestrator.gateway.tokens import token_counter

    log.debug("token counting with %s", token_counter().tokenizer)


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # OrchestratorServer handles SIGINT/SIGTERM itself so that its clean-up runs before exit.
        yield


class OrchestratorServer:
    def __init__(self, services: Services, listeners: Listeners, applying: Future[list[ApplyResult]]) -> None:
        """`applying`: the first reconcile, started before the server (see `start_apply`)."""
        self.services = services
        self.listeners = listeners
        self._applying = applying
        self.app = create_app(services)
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            log_config=None,
            # Agents hold long-polls open; do not let them hold up a shutdown.
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            # A bigger frame closes the sender's channel (1009) before it is read into memory.
            ws_max_size=services.fleet.config.limits.bytes_of("channel_frame"),
        )
        self.server = _Server(config)
        self.ready = asyncio.Event()
        self.watcher = WorkspaceWatcher(
            services.fleet_view, services.paths, services.events, services.workspaces
        )

    async def _background(self) -> list[asyncio.Task[None]]:
        services = self.services
        await asyncio.wrap_future(self._applying)
        await asyncio.to_thread(self.watcher.start)
        alerts = AlertDispatcher(
            lambda: services.fleet.config.alerts,
            services.fleet.name,
            services.events,
            AlertStore(services.db),
            services.health.is_checking_in,
        )
        tasks = [
            asyncio.create_task(services.supervisor.run(), name="supervisor"),
            asyncio.create_task(services.scheduler.run(), name="scheduler"),
            asyncio.create_task(alerts.run(), name="alerts"),
            asyncio.create_task(services.notifier.run(), name="notifications"),
            asyncio.create_task(ChatService(services.fleet_view, services.conversations).run(), name="chat"),
            asyncio.create_task(
                scheduled_backups(
                    services.fleet_view,
                    services.paths,
                    services.asker,
                    services.events.publish,
                    stopped_snapshots(services.manager, services.backend, services.paths, services.controls),
                ).run(),
                name="backups",
            ),
            asyncio.create_task(keep_messages_in_step(services.broker.messages), name="message-repair"),
            asyncio.create_task(services.retention.run(), name="retention"),
            asyncio.create_task(_workflow_service(services).run(), name="workflows"),
        ]
        if not services.backend.carries_storage:
            restores = LinkRestores(
                services.paths,
                lambda: tuple(services.fleet_view.current().config.agents),
                link_asker(services.asker),
                services.agent_links,
                services.controls,
                services.events.publish,
            )
            tasks.append(asyncio.create_task(restores.run(), name="channel-restores"))
        traces = trace_export(services.db, services.agent_links, services.fleet.name)
        if traces is not None:
            tasks.append(asyncio.create_task(traces.run(), name="traces"))
        self.ready.set()
        return tasks

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop)

    async def serve(self) -> None:
        self._install_signal_handlers()
        write_endpoint(
            self.services.paths,
            Endpoint(url=self.listeners.operator_url, token=self.services.operator_token, pid=os.getpid()),
        )
        # Every agent's first message counts tokens through the gateway: load the table while
        # the agents start, not on the path of their first answers.
        threading.Thread(target=_load_token_table, name="token-table", daemon=True).start()
        serving = asyncio.create_task(self.server.serve(sockets=self.listeners.sockets))
        while not self.server.started and not serving.done():
            await asyncio.sleep(0.02)
        tasks: list[asyncio.Task[None]] = []
        try:
            if not serving.done():
                tasks = await self._background()
            await serving
        finally:
            self.watcher.stop()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self.services.paths.endpoint_file.unlink(missing_ok=True)

    def stop(self) -> None:
        """First call: graceful shutdown. A second call (a second Ctrl-C) stops at once."""
        if self.server.should_exit:
            self.server.force_exit = True
        self.server.should_exit = True
        self.services.inbox.close()
        close_streams(self.app)


def _workflow_service(services: Services) -> WorkflowService:
    """Workflow runs are kept as long as run records are."""
    return WorkflowService(
        services.workflows,
        WorkflowTriggers(services.workflows, services.fleet_view, utcnow),
        services.inbox,
        services.events,
        lambda: timedelta(seconds=parse_duration(services.fleet.config.limits.retention.runs.age)),
        spans=otlp_run_spans(services.fleet.name),
    )

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
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import uvicorn

from orchestrator.api.app import create_app
from orchestrator.cli.client import Endpoint, write_endpoint
from orchestrator.operator.events_routes import close_streams
from orchestrator.operator.watcher import WorkspaceWatcher
from orchestrator.reconcile import ApplyResult
from orchestrator.services import Services

log = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN_S = 3


class PortTaken(Exception):
    pass


@dataclass(frozen=True)
class Listeners:
    sockets: list[socket.socket]
    operator_url: str
    agent_url: str


def _bind(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise PortTaken(
            f"cannot listen on {host}:{port}: {exc.strerror}; choose another with --port"
        ) from None
    sock.listen(512)
    sock.setblocking(False)
    return sock


def bind_listeners(agent_host: str, port: int) -> Listeners:
    """Loopback for the operator; the fleet network's gateway for agents (same port)."""
    loopback = _bind("127.0.0.1", port)
    port = loopback.getsockname()[1]
    sockets = [loopback]
    if agent_host not in ("127.0.0.1", "localhost"):
        try:
            sockets.append(_bind(agent_host, port))
        except PortTaken:
            loopback.close()
            raise
    return Listeners(sockets, f"http://127.0.0.1:{port}", f"http://{agent_host}:{port}")


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # OrchestratorServer handles SIGINT/SIGTERM itself so that its clean-up runs before exit.
        yield


class OrchestratorServer:
    def __init__(
        self,
        services: Services,
        listeners: Listeners,
        on_apply: Callable[[ApplyResult], None] = lambda _: None,
    ) -> None:
        self.services = services
        self.listeners = listeners
        self._on_apply = on_apply
        services.agent_url = listeners.agent_url
        self.app = create_app(services)
        config = uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="on",
            log_config=None,
            # Agents hold long-polls open; do not let them hold up a shutdown.
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        )
        self.server = _Server(config)
        self.ready = asyncio.Event()
        self.watcher = WorkspaceWatcher(services)

    async def _background(self) -> list[asyncio.Task[None]]:
        services = self.services
        await asyncio.to_thread(services.manager.apply, self._on_apply)
        await asyncio.to_thread(self.watcher.start)
        tasks = [
            asyncio.create_task(services.supervisor.run(), name="supervisor"),
            asyncio.create_task(services.scheduler.run(), name="scheduler"),
        ]
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

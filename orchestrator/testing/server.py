"""Serve an ASGI app with uvicorn on 127.0.0.1 in a background thread, for tests and benchmarks.

    with serve_app(create_app(services)) as base_url:
        httpx.get(f"{base_url}/api/v1/...")

The socket is bound before the server starts (port 0, so the kernel picks a free port), which
leaves no window in which another process could take the port.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from orchestrator.listeners import tcp_listener

STARTUP_TIMEOUT_S = 15.0
SHUTDOWN_TIMEOUT_S = 15.0


class ServerStartError(RuntimeError):
    """The app did not start serving (its lifespan failed or startup timed out)."""


def _bind_loopback(host: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = tcp_listener(family)
    sock.bind((host, 0))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextmanager
def serve_app(app: Any, host: str = "127.0.0.1", **config: Any) -> Iterator[str]:
    """Run `app` until the block exits; yields its base URL (no trailing slash).

    Extra keyword arguments go to `uvicorn.Config` (e.g. `log_level="debug"`).
    """
    sock = _bind_loopback(host)
    port = int(sock.getsockname()[1])
    settings: dict[str, Any] = {"log_level": "warning", "access_log": False, "lifespan": "on"}
    settings.update(config)
    server = uvicorn.Server(uvicorn.Config(app, **settings))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"uvicorn-{port}", daemon=True
    )
    thread.start()
    try:
        _wait_started(server, thread)
        yield _url(host, port)
    finally:
        server.should_exit = True
        thread.join(SHUTDOWN_TIMEOUT_S)
        if thread.is_alive():
            server.force_exit = True
            thread.join(SHUTDOWN_TIMEOUT_S)
        sock.close()


def _wait_started(server: uvicorn.Server, thread: threading.Thread) -> None:
    """Block until uvicorn reports it is serving, or its thread ended, or the timeout passed."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    if not server.started:
        server.should_exit = True
        thread.join(SHUTDOWN_TIMEOUT_S)
        raise ServerStartError(
            f"uvicorn did not start: its lifespan failed or {STARTUP_TIMEOUT_S:.0f}s passed (see its log)"
        )

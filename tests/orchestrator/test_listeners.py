"""The orchestrator's listening sockets answer kept-alive requests without Nagle's delay.

A response written in two parts (headers, then body) on a connection with Nagle's algorithm on
waits for the client's delayed ACK (about 40 ms on Linux). The test measures that stall on a
raw loopback echo in the same run and requires a kept-alive HTTP round trip to be a small
fraction of it, so it holds on a slow or busy machine and fails on the stall alone.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from orchestrator.listeners import bind_listeners, tcp_listener
from orchestrator.testing.server import serve_app
from tests.nagle import delayed_ack_stall, median_round_trip

# The HTTP round trip must take less than this share of the measured delayed-ACK stall.
MAX_SHARE_OF_STALL = 0.25


async def trivial_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Headers and body as two messages, as every framework sends them."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"ok"})


def http_round_trip(base_url: str) -> float:
    with httpx.Client(base_url=base_url) as client:
        return median_round_trip(lambda: client.get("/").raise_for_status())


@contextmanager
def serve_on(sockets: list[socket.socket]) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(trivial_app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    host, port = sockets[0].getsockname()[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(15)


@pytest.fixture(scope="module")
def stall() -> float:
    measured = delayed_ack_stall(nodelay=False)
    # The reference only means something if the stall shows on this machine's loopback.
    assert measured > 10 * delayed_ack_stall(nodelay=True), "no delayed-ACK stall to compare with"
    return measured


def test_listener_sockets_name_tcp_and_disable_nagle() -> None:
    sock = tcp_listener()
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        sock.close()


def test_orchestrator_listeners_answer_kept_alive_requests_without_stall(stall: float) -> None:
    listeners = bind_listeners("127.0.0.1", 0)
    with serve_on(listeners.sockets) as url:
        round_trip = http_round_trip(url)
    assert round_trip < MAX_SHARE_OF_STALL * stall, (
        f"kept-alive round trip {round_trip * 1000:.2f} ms vs delayed-ACK stall {stall * 1000:.2f} ms"
    )


def test_test_server_answers_kept_alive_requests_without_stall(stall: float) -> None:
    with serve_app(trivial_app) as url:
        round_trip = http_round_trip(url)
    assert round_trip < MAX_SHARE_OF_STALL * stall, (
        f"kept-alive round trip {round_trip * 1000:.2f} ms vs delayed-ACK stall {stall * 1000:.2f} ms"
    )

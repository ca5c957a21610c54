"""The orchestrator's listening sockets: bound before anything else starts.

Loopback serves the CLI and the dashboard; the fleet network's gateway address serves agents.
Both are bound and listening before the first agent starts, so an agent that dials before the
server runs waits in the socket's backlog instead of being refused.

Every listening socket is made by `tcp_listener`, which names its protocol: asyncio turns Nagle's
algorithm off on an accepted connection only when the listening socket says it is TCP
(`sock.proto == IPPROTO_TCP`). With protocol 0 a response written in two parts (headers, then
body) waits for the client's delayed ACK, about 40 ms on every kept-alive request.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass


class PortTaken(Exception):
    pass


@dataclass(frozen=True)
class Listeners:
    sockets: list[socket.socket]
    operator_url: str
    agent_url: str

    @property
    def port(self) -> int:
        """The one port both addresses listen on."""
        port: int = self.sockets[0].getsockname()[1]
        return port


def tcp_listener(family: socket.AddressFamily = socket.AF_INET) -> socket.socket:
    """A TCP socket ready to bind, whose accepted connections send without Nagle's delay."""
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted sockets inherit this on Linux, so connections served by code other than
    # asyncio's transports get it too.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _bind(host: str, port: int) -> socket.socket:
    sock = tcp_listener()
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


def check_port_free(port: int) -> None:
    """Raise PortTaken when the operator's loopback address cannot listen on `port` now (before
    a start that would fail there only after it said it started)."""
    if port:
        _bind("127.0.0.1", port).close()


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

"""The orchestrator's listening sockets: bound before anything else starts.

Loopback serves the CLI and the dashboard; the fleet network's gateway address serves agents.
Both are bound and listening before the first agent starts, so an agent that dials before the
server runs waits in the socket's backlog instead of being refused.
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

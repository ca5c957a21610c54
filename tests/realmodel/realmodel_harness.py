"""Shared by the realmodel tests and their fixtures."""

from __future__ import annotations

import socket

# The window the server runs the model with: the size SmolLM2 was trained for.
MODEL_WINDOW = 8192


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

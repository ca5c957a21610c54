"""Shared by the realmodel tests."""

from __future__ import annotations

import socket

from orchestrator.testing.llama_server import SMOLLM2_WINDOW

MODEL_WINDOW = SMOLLM2_WINDOW


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

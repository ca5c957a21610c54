"""The search MCP server (search_server.py) run as a process of its own on 127.0.0.1, for tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from orchestrator.testing.cli import wait_for

SERVER = Path(__file__).parent / "search_server.py"


class SearchServer:
    def __init__(self, port: int, token: str, seen: Path) -> None:
        self.port = port
        self.token = token
        self.seen = seen
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), str(self.port), self.token, str(self.seen)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self._answers, "the MCP server to listen", deadline_s=60)

    def _answers(self) -> bool:
        try:
            httpx.get(f"http://127.0.0.1:{self.port}/mcp", timeout=2)
        except httpx.HTTPError:
            return False
        return True

    def tokens_seen(self) -> list[str]:
        return self.seen.read_text().split() if self.seen.exists() else []

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)

"""Shared by the realmodel tests: the fleet they run and how they drive it."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orchestrator.testing.cli import run_flotilla
from orchestrator.testing.llama_server import MODEL_ALIAS, SMOLLM2_WINDOW

MODEL_WINDOW = SMOLLM2_WINDOW
MODEL = f"llamacpp:{MODEL_ALIAS}"
PRICE_IN, PRICE_OUT = 0.5, 1.5  # per million tokens: small, so that every run has a cost
# A small model may write until its window is full; the gateway caps what a request leaves open.
MAX_OUTPUT_TOKENS = 160
SEND_TIMEOUT_S = 600


def fleet_yaml(url: str, agents: str) -> str:
    return f"""\
version: 1
fleet: realmodel
llm:
  default_model: {MODEL}
  providers:
    llamacpp: {{base_url: "{url}", timeout_s: {SEND_TIMEOUT_S}}}
  models:
    {MODEL}:
      context_window: {MODEL_WINDOW}
      max_output_tokens: {MAX_OUTPUT_TOKENS}
      input_per_mtok: {PRICE_IN}
      output_per_mtok: {PRICE_OUT}
agents:
{agents}"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def flotilla(
    folder: Path, *args: str, timeout: float = SEND_TIMEOUT_S + 60
) -> subprocess.CompletedProcess[str]:
    return run_flotilla(folder, *args, timeout=timeout)


@contextmanager
def running_fleet(folder: Path, url: str, agents: str) -> Iterator[Path]:
    """A process-runtime fleet whose agents use the real model; taken down at the end."""
    (folder / "fleet.yaml").write_text(fleet_yaml(url, agents))
    try:
        started = flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        flotilla(folder, "down", "-v")


def send(folder: Path, agent: str, text: str) -> str:
    """The reply as `flotilla send` streams it (a weak model may well answer with nothing)."""
    result = flotilla(folder, "send", agent, text, "--timeout", str(SEND_TIMEOUT_S))
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def turns(folder: Path, agent: str) -> list[dict[str, Any]]:
    """The agent's turn records, newest first."""
    result = flotilla(folder, "runs", agent, "--kind", "turn", "--json", "-n", "100")
    assert result.returncode == 0, result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def state(folder: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    """A read of the orchestrator's state database."""
    with sqlite3.connect(folder / ".flotilla" / "state.db") as db:
        return db.execute(sql, params).fetchall()

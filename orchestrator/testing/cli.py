"""Helpers for tests and benchmarks that drive a fleet through the `flotilla` command line, each
call a process of its own, as an operator's would be."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any


def run_flotilla(
    folder: Path,
    *args: str,
    timeout: float = 120,
    file: str = "fleet.yaml",
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`flotilla ARGS --file FOLDER/FILE` run in FOLDER; never raises for its exit code."""
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli.main", *args, "--file", str(folder / file)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=dict(env) if env is not None else None,
        input=stdin,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(condition: Callable[[], bool], what: str, deadline_s: float = 60, every_s: float = 0.3) -> None:
    """Poll until `condition` holds; AssertionError naming `what` after `deadline_s`."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(every_s)
    raise AssertionError(f"gave up waiting for {what} after {deadline_s:.0f}s")


def fleet_status(folder: Path) -> dict[str, dict[str, Any]]:
    """`flotilla ps --json`, by agent name."""
    result = run_flotilla(folder, "ps", "--json")
    assert result.returncode == 0, result.stderr
    return {agent["name"]: agent for agent in json.loads(result.stdout)["agents"]}

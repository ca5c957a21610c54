"""Helpers for tests and benchmarks that drive a fleet through the `flotilla` command line, each
call a process of its own, as an operator's would be."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any


def flotilla_command(*args: str, fleet_file: Path | None = None) -> list[str]:
    """The command line of `flotilla ARGS [--file FLEET_FILE]`, run by this Python interpreter so
    that it loads the same tree as the caller."""
    command = [sys.executable, "-m", "orchestrator.cli.main", *args]
    return command if fleet_file is None else [*command, "--file", str(fleet_file)]


def run_flotilla(
    folder: Path,
    *args: str,
    timeout: float | None = 120,
    file: str | None = "fleet.yaml",
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`flotilla ARGS --file FOLDER/FILE` run in FOLDER; never raises for its exit code.

    `file=None` leaves `--file` out, for commands that take no fleet (`init`, `verify`) or that
    find fleet.yaml in FOLDER themselves; `prefix` runs the command under another one (`nsenter`)."""
    return subprocess.run(
        [*prefix, *flotilla_command(*args, fleet_file=None if file is None else folder / file)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=dict(env) if env is not None else None,
        input=stdin,
    )


def run_flotilla_ok(
    folder: Path,
    *args: str,
    timeout: float | None = 120,
    env: Mapping[str, str] | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`run_flotilla` that raises AssertionError, with the command's output, when it fails."""
    result = run_flotilla(folder, *args, timeout=timeout, env=env, prefix=prefix)
    if result.returncode != 0:
        raise AssertionError(f"flotilla {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result


def start_flotilla(
    folder: Path,
    *args: str,
    file: str | None = "fleet.yaml",
    env: Mapping[str, str] | None = None,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = subprocess.PIPE,
) -> subprocess.Popen[str]:
    """`flotilla ARGS --file FOLDER/FILE` started in FOLDER and left running (a follow, a `send`
    that waits, a foreground `up`); the caller waits for it or ends it."""
    return subprocess.Popen(
        flotilla_command(*args, fleet_file=None if file is None else folder / file),
        cwd=folder,
        env=dict(env) if env is not None else None,
        stdout=stdout,
        stderr=stderr,
        text=True,
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

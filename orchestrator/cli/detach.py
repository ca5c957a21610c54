"""`up -d`: start the orchestrator as a background process and wait until the fleet is healthy.

Kept apart from `launch` so that the waiting parent never imports the server.
"""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from orchestrator.backends.select import Runtime
from orchestrator.cli.client import ApiClient, CliError, read_endpoint
from orchestrator.state.paths import StatePaths

READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class LaunchOptions:
    runtime: Runtime
    port: int
    image: str
    log_json: bool = False
    check_image: bool = True


def ensure_agent_image(image: str, console: Console) -> None:
    """Build the agent image when it is missing or older than the source, showing progress."""
    from orchestrator.image import ImageError, ensure_image

    def progress(stage: str, line: str) -> None:
        console.print(f"[dim]image {stage}:[/dim] {line.rstrip()}", highlight=False)

    try:
        result = ensure_image(tag=image, rebuild_stale=True, progress=progress)
    except ImageError as exc:
        raise CliError(f"cannot get the agent image {image}: {exc}") from None
    if result.built:
        console.print(f"built {image} in {result.duration_s:.0f}s")
    elif not result.up_to_date:
        console.print(f"[yellow]{image} is older than the source; `flotilla image build` updates it[/yellow]")


def spawn_server(fleet_file: Path, options: LaunchOptions, log: Any) -> subprocess.Popen[bytes]:
    args = [
        sys.executable,
        "-m",
        "orchestrator.cli.main",
        "serve",
        "-f",
        str(fleet_file),
        "--runtime",
        options.runtime,
        "--port",
        str(options.port),
        "--image",
        options.image,
        "--skip-image-check",
    ]
    if options.log_json:
        args.append("--log-json")
    child = subprocess.Popen(
        args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    return child


def launch_detached(fleet_file: Path, options: LaunchOptions, paths: StatePaths) -> None:
    console = Console()
    paths.ensure()
    if options.runtime == "docker":
        ensure_agent_image(options.image, console)
    with paths.log_file.open("ab") as log:
        child = spawn_server(fleet_file, options, log)
    paths.pid_file.write_text(f"{child.pid}\n")
    console.print(f"orchestrator started (pid {child.pid}, log {paths.log_file})")
    _wait_until_ready(paths, child, console)


def _wait_until_ready(paths: StatePaths, child: subprocess.Popen[bytes], console: Console) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    with console.status("waiting for the agents to check in...") as spinner:
        while time.monotonic() < deadline:
            if child.poll() is not None:
                tail = paths.log_file.read_text(errors="replace").splitlines()[-5:]
                raise CliError("the orchestrator exited during start-up:\n  " + "\n  ".join(tail))
            endpoint = read_endpoint(paths)
            if endpoint is not None:
                with closing(ApiClient(endpoint)) as client:
                    status = client.get("/api/v1/fleet")
                if status["problems"]:
                    problems = "\n  ".join(status["problems"])
                    raise CliError(f"the orchestrator runs, but some agents could not start:\n  {problems}")
                healthy = sum(1 for a in status["agents"] if a["health"] == "healthy")
                total = len(status["agents"])
                spinner.update(f"{healthy}/{total} agents healthy")
                if healthy == total:
                    console.print(f"{total} agents healthy")
                    console.print(
                        f"API and dashboard: {endpoint.url}/?token={endpoint.token}", highlight=False
                    )
                    return
            time.sleep(0.3)
    raise CliError(f"the agents did not all become healthy within {READY_TIMEOUT_S:.0f}s; see `flotilla ps`")

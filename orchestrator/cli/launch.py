"""Starting the orchestrator: in the foreground with a live status table, or detached."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.live import Live

from orchestrator.backends.base import Backend, BackendError
from orchestrator.backends.select import Runtime, remember_runtime
from orchestrator.cli.client import ApiClient, CliError, read_endpoint
from orchestrator.cli.render import fleet_table
from orchestrator.config.loader import LoadedFleet
from orchestrator.logging_setup import configure_logging
from orchestrator.reconcile import ApplyResult
from orchestrator.server import Listeners, OrchestratorServer, PortTaken, bind_listeners
from orchestrator.state.paths import StatePaths
from orchestrator.wiring import build_services

READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class LaunchOptions:
    runtime: Runtime
    port: int
    image: str
    log_json: bool = False


def _ensure_image(image: str, console: Console) -> None:
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


def prepare(
    fleet: LoadedFleet, backend: Backend, options: LaunchOptions, console: Console
) -> tuple[OrchestratorServer, Listeners]:
    """Everything before serving: image, fleet network, listeners and the wired services."""
    os.umask(0o002)
    paths = StatePaths.for_fleet_file(fleet.path)
    paths.ensure()
    if options.runtime == "docker":
        _ensure_image(options.image, console)
    try:
        agent_host = backend.prepare_fleet(fleet.name)
        listeners = bind_listeners(agent_host, options.port)
    except (BackendError, PortTaken) as exc:
        raise CliError(str(exc)) from None
    remember_runtime(paths, options.runtime)
    services = build_services(fleet, backend, paths, image=options.image)

    def report(result: ApplyResult) -> None:
        mark = "[green]ok[/green]" if result.ok else f"[red]failed: {result.error}[/red]"
        console.print(f"{result.action} {mark}", highlight=False)

    return OrchestratorServer(services, listeners, on_apply=report), listeners


def _print_access(console: Console, listeners: Listeners, token: str) -> None:
    console.print(f"API and dashboard: {listeners.operator_url}/?token={token}", highlight=False)
    console.print(f"agents dial {listeners.agent_url}", highlight=False)


def run_foreground(fleet: LoadedFleet, backend: Backend, options: LaunchOptions) -> None:
    console = Console()
    configure_logging(json=options.log_json, level="WARNING")
    server, listeners = prepare(fleet, backend, options, console)
    _print_access(console, listeners, server.services.operator_token)
    stop_table = threading.Event()
    if console.is_terminal:
        threading.Thread(target=_live_table, args=(server, console, stop_table), daemon=True).start()
    try:
        asyncio.run(server.serve())
    finally:
        stop_table.set()
    console.print(
        "orchestrator stopped; agents keep running (`flotilla up` adopts them, `flotilla down` removes them)"
    )


def serve_detached_child(fleet: LoadedFleet, backend: Backend, options: LaunchOptions) -> None:
    """The body of the background process started by `up -d`: no table, logs to its log file."""
    configure_logging(json=options.log_json, level="INFO")
    console = Console(force_terminal=False)
    server, _ = prepare(fleet, backend, options, console)
    asyncio.run(server.serve())


def _live_table(server: OrchestratorServer, console: Console, stop: threading.Event) -> None:
    from orchestrator.api.operator_routes import fleet_status_of

    while not server.ready.is_set() and not stop.is_set():
        time.sleep(0.2)
    with Live(console=console, refresh_per_second=2, transient=False) as live:
        while not stop.is_set():
            try:
                live.update(fleet_table(fleet_status_of(server.services).model_dump()))
            except BackendError as exc:
                live.update(f"[red]{exc}[/red]")
            stop.wait(1.0)


def launch_detached(fleet_file: Path, options: LaunchOptions, paths: StatePaths) -> None:
    from orchestrator.cli.fleet import spawn_server

    console = Console()
    paths.ensure()
    if options.runtime == "docker":
        _ensure_image(options.image, console)
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
                status = ApiClient(endpoint).get("/api/v1/fleet")
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

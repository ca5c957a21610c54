"""Starting the orchestrator: in the foreground with a live status table, or detached."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.live import Live

from agent_runtime import collector_paused
from orchestrator.backends.base import LABEL_STATE, Backend, BackendError
from orchestrator.backends.select import IMAGE_RUNTIMES, remember_runtime
from orchestrator.cli.errors import CliError
from orchestrator.cli.launch_options import LaunchOptions, ensure_agent_image, fleet_image
from orchestrator.cli.render import fleet_table
from orchestrator.config.fleet import LoadedFleet
from orchestrator.fleet.reconcile import ApplyResult, fleet_labels
from orchestrator.listeners import Listeners, PortTaken, bind_listeners
from orchestrator.logging_setup import configure_logging
from orchestrator.state.cleanup import remove_leftover_temp_files
from orchestrator.state.migrations import StateTooNew
from orchestrator.state.paths import StatePaths
from orchestrator.wiring import attach_subsystems, reconciling_services

if TYPE_CHECKING:
    from orchestrator.server import OrchestratorServer


def _refuse_foreign_units(fleet: LoadedFleet, backend: Backend, paths: StatePaths) -> None:
    """Units of a fleet with the same name started from another folder are not ours to adopt."""
    try:
        units = backend.list(fleet_labels(fleet.name))
    except BackendError as exc:
        raise CliError(str(exc)) from None
    owners = {u.labels.get(LABEL_STATE) for u in units} - {None, str(paths.root)}
    if owners:
        elsewhere = ", ".join(sorted(str(Path(o).parent) for o in owners if o))
        raise CliError(
            f"a fleet named {fleet.name!r} already runs from {elsewhere}: "
            "rename this fleet in fleet.yaml, or run `flotilla down` there first"
        )


def prepare(
    fleet: LoadedFleet, backend: Backend, options: LaunchOptions, console: Console
) -> tuple[OrchestratorServer, Listeners]:
    """Everything before serving: image, fleet network, listeners, the wired services, and the
    first reconcile, started as soon as the agents' tokens can be minted.

    The agents start while the rest of the orchestrator is imported and built (about a second);
    the ones that dial early wait in the listening sockets' backlog.
    """
    os.umask(0o002)
    paths = StatePaths.for_fleet_file(fleet.path)
    paths.ensure()
    remove_leftover_temp_files(paths)
    if options.runtime in IMAGE_RUNTIMES and options.check_image:
        ensure_agent_image(options.image, console, options.verbose)
        options = replace(options, image=fleet_image(options.image, fleet.config, console, options.verbose))
    _refuse_foreign_units(fleet, backend, paths)
    try:
        core, manager = reconciling_services(fleet, backend, paths, image=options.image)
    except StateTooNew as exc:
        raise CliError(str(exc)) from None
    try:
        agent_host = backend.prepare_fleet(fleet.name)
        listeners = bind_listeners(agent_host, options.port)
        fence_warning = backend.guard_fleet(fleet.name, agent_host, listeners.port)
    except BackendError as exc:
        raise CliError(f"{exc}; once that is fixed, run `flotilla up` again") from None
    except PortTaken as exc:
        raise CliError(str(exc)) from None
    if fence_warning:
        console.print(f"[bold red]warning: {fence_warning}[/bold red]", highlight=False)
    remember_runtime(paths, options.runtime)
    try:
        manager.agent_url = backend.dial_url(fleet.name, listeners.agent_url)
    except BackendError as exc:
        raise CliError(str(exc)) from None

    def report(result: ApplyResult) -> None:
        mark = "[green]ok[/green]" if result.ok else f"[red]failed: {result.error}[/red]"
        console.print(f"{result.action} {mark}", highlight=False)

    applying = manager.apply_in_background(report)
    # Most of the orchestrator's code loads here, in the process that runs it (this is never
    # called inside another program), so it loads with the collector paused and is then frozen.
    with collector_paused():
        services = attach_subsystems(core, manager)
        from orchestrator.server import OrchestratorServer

        server = OrchestratorServer(services, listeners, applying)
    return server, listeners


def _print_access(console: Console, listeners: Listeners, token: str) -> None:
    if console.is_terminal:
        console.print(f"API and dashboard: {listeners.operator_url}/?token={token}", highlight=False)
    else:
        # Not a terminal: a service's journal or a CI log, kept and read by others; no token there.
        console.print(
            f"API and dashboard: {listeners.operator_url}/ (`flotilla dashboard` prints the address "
            "with the operator token)",
            highlight=False,
        )
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


def serve_detached_child(
    fleet: LoadedFleet, backend: Backend, options: LaunchOptions, log_file: Path | None = None
) -> None:
    """The body of the background process started by `up -d`: no table, logs to its log file
    (rotated by size; without one, to stderr)."""
    configure_logging(json=options.log_json, level="INFO", file=log_file)
    console = Console(force_terminal=False)
    server, _ = prepare(fleet, backend, options, console)
    asyncio.run(server.serve())


def _live_table(server: OrchestratorServer, console: Console, stop: threading.Event) -> None:
    from orchestrator.api.operator.fleet_status import fleet_status_of

    while not server.ready.is_set() and not stop.is_set():
        time.sleep(0.2)
    with Live(console=console, refresh_per_second=2, transient=False) as live:
        while not stop.is_set():
            try:
                live.update(fleet_table(fleet_status_of(server.services).model_dump()))
            except BackendError as exc:
                live.update(f"[red]{exc}[/red]")
            stop.wait(1.0)

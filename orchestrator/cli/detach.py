"""`up -d`: start the orchestrator as a background process and wait until the fleet is healthy.

Kept apart from `launch` so that the waiting parent never imports the server.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from contextlib import closing
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from agent_runtime import collector_paused
from orchestrator.backends.select import IMAGE_RUNTIMES, Runtime
from orchestrator.cli.client import ApiClient
from orchestrator.cli.errors import CliError
from orchestrator.cli.launch_options import LaunchOptions, ensure_agent_image, fleet_image
from orchestrator.config.fleet import LoadedFleet
from orchestrator.listeners import PortTaken, check_port_free
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths

_IMPORTED = time.monotonic()
READY_TIMEOUT_S = 180.0
APPLY_S_PER_AGENT = 0.5
READY_WAIT_S = 2.0
ENDPOINT_CHECK_S = 0.05


def launch_detached(fleet: LoadedFleet, options: LaunchOptions, paths: StatePaths) -> None:
    console = Console()
    try:
        check_port_free(options.port)
    except PortTaken as taken:
        raise CliError(str(taken)) from None
    paths.ensure()
    if options.runtime in IMAGE_RUNTIMES:
        ensure_agent_image(options.image, console, options.verbose)
        options = replace(options, image=fleet_image(options.image, fleet.config, console, options.verbose))
    pid = _fork_server(fleet, options, paths)
    paths.pid_file.write_text(f"{pid}\n")
    if options.runtime == "external":
        _wait_until_serving(paths, pid, console)
    else:
        _wait_until_ready(paths, pid, console, options.runtime)


def _fork_server(fleet: LoadedFleet, options: LaunchOptions, paths: StatePaths) -> int:
    """Run the orchestrator in a forked child, in a session of its own, logging to the log file.

    A fork keeps what this process has already loaded (the CLI, the fleet, the docker client
    library): a fresh interpreter would spend a third of a second loading it again before the
    first agent could start.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    with paths.log_file.open("ab") as log:
        pid = os.fork()
        if pid != 0:
            return pid
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    os._exit(_serve_child(fleet, options, paths))


def _serve_child(fleet: LoadedFleet, options: LaunchOptions, paths: StatePaths) -> int:
    """The forked child's life: serve until stopped; its exit status."""
    from orchestrator.backends.select import open_backend

    with collector_paused():
        from orchestrator.cli.launch import serve_detached_child

    try:
        # A backend of its own: the parent's client holds connections the parent may still use.
        backend = open_backend(options.runtime, paths, options.agent_listen)
        serve_detached_child(fleet, backend, replace(options, check_image=False), paths.log_file)
    except CliError as failed:
        print(f"error: {failed}", file=sys.stderr, flush=True)
        return 1
    except SystemExit as leaving:
        return leaving.code if isinstance(leaving.code, int) else 1
    except BaseException:  # noqa: BLE001 - the last resort of a process that must not unwind into the CLI
        traceback.print_exc()
        return 1
    return 0


def _wait_until_serving(paths: StatePaths, pid: int, console: Console) -> None:
    """Until the orchestrator listens: its agents run on another engine, which starts them when
    the operator applies their manifests, so nothing here waits for them."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if _exited(pid):
            tail = paths.log_file.read_text(errors="replace").splitlines()[-5:]
            raise CliError("the orchestrator exited during start-up:\n  " + "\n  ".join(tail))
        endpoint = read_endpoint(paths)
        if endpoint is not None:
            console.print(f"orchestrator started (pid {pid}, log {paths.log_file})")
            console.print(
                "agents check in when the cluster runs their pods (`flotilla ps` shows them)", highlight=False
            )
            console.print(f"API and dashboard: {endpoint.url}/?token={endpoint.token}", highlight=False)
            return
        time.sleep(ENDPOINT_CHECK_S)
    raise CliError(f"the orchestrator did not start within {READY_TIMEOUT_S:.0f}s; see {paths.log_file}")


def _wait_until_ready(paths: StatePaths, pid: int, console: Console, runtime: Runtime) -> None:
    """Until every agent takes messages (its runtime loaded); prints when all had checked in
    and when all could take a message, counted from the start of this command."""
    started = time.monotonic()
    deadline = started + READY_TIMEOUT_S
    checked_in_s: float | None = None
    serving = False  # said once it listens, never before
    with console.status("waiting for the agents to check in...") as spinner:
        while time.monotonic() < deadline:
            if _exited(pid):
                tail = paths.log_file.read_text(errors="replace").splitlines()[-5:]
                raise CliError("the orchestrator exited during start-up:\n  " + "\n  ".join(tail))
            endpoint = read_endpoint(paths)
            if endpoint is None:
                time.sleep(ENDPOINT_CHECK_S)
                continue
            if not serving:
                serving = True
                console.print(f"orchestrator started (pid {pid}, log {paths.log_file})")
            with closing(ApiClient(endpoint)) as client:
                # Answers as soon as every agent takes messages, else after READY_WAIT_S.
                readiness = client.get("/api/v1/fleet/ready", wait=READY_WAIT_S)
            if readiness["problems"]:
                problems = "\n  ".join(readiness["problems"])
                raise CliError(f"the orchestrator runs, but some agents could not start:\n  {problems}")
            total, answering = readiness["total"], readiness.get("answering", readiness["healthy"])
            # Making every unit takes longer the more agents there are, asleep ones included.
            declared = total + readiness.get("asleep", 0)
            deadline = started + READY_TIMEOUT_S + APPLY_S_PER_AGENT * declared
            if checked_in_s is None and readiness["healthy"] >= total:
                checked_in_s = _since_start()
            spinner.update(
                f"{readiness['healthy']}/{total} agents checked in, {answering}/{total} take messages"
            )
            if answering >= total and not readiness.get("applying"):
                for warning in readiness.get("warnings", []):
                    console.print(f"[bold red]warning: {warning}[/bold red]", highlight=False)
                console.print(_ready_line(total, readiness.get("asleep", 0), checked_in_s, _since_start()))
                console.print(f"API and dashboard: {endpoint.url}/?token={endpoint.token}", highlight=False)
                return
    waited_s = time.monotonic() - started
    raise CliError(
        f"the agents did not all become ready within {waited_s:.0f}s:\n  "
        + "\n  ".join(_not_ready(paths, runtime))
        + "\nlook further with `flotilla ps` and `flotilla logs AGENT`"
    )


def _not_ready(paths: StatePaths, runtime: Runtime) -> list[str]:
    from orchestrator.cli.not_ready import not_ready_lines

    endpoint = read_endpoint(paths)
    if endpoint is None:
        return [f"the orchestrator stopped answering; see {paths.log_file}"]
    with closing(ApiClient(endpoint)) as client:
        return not_ready_lines(client, runtime, paths)


def _ready_line(awake: int, asleep: int, checked_in_s: float | None, ready_s: float) -> str:
    """What `up -d` says once the fleet is ready: sleeping agents are ready too (they wake on work)."""
    sleeping = f"{asleep} agent{'' if asleep == 1 else 's'} asleep (wake{'s' if asleep == 1 else ''} on work)"
    if awake == 0:
        return f"ready after {ready_s:.1f}s: {sleeping}"
    line = (
        f"{awake} agent{'' if awake == 1 else 's'} checked in after {checked_in_s or ready_s:.1f}s, "
        f"{'it takes' if awake == 1 else 'all take'} messages after {ready_s:.1f}s"
    )
    return f"{line}; {sleeping}" if asleep else line


def _since_start() -> float:
    """Seconds since this CLI process started (the moment the operator ran the command), from
    /proc where there is one, else since this module was imported."""
    try:
        stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        uptime_s = float(Path("/proc/uptime").read_text().split()[0])
        return uptime_s - int(stat[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.monotonic() - _IMPORTED


def _exited(pid: int) -> bool:
    finished, _status = os.waitpid(pid, os.WNOHANG)
    return finished == pid

"""Fleet lifecycle commands: validate, schema, up, apply, ps, logs, down."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import click

from orchestrator.backends.base import Backend, BackendError, BackendUnavailable, UnitInfo
from orchestrator.backends.external import NEEDS_ADDRESS
from orchestrator.backends.select import RUNTIMES, Runtime, open_backend, remembered_runtime
from orchestrator.cli.apply_image import ImagePlan, image_for, planned_image
from orchestrator.cli.common import DEFAULT_PORT, check_capacity_or_exit, client_for, load_or_exit
from orchestrator.cli.errors import EXIT_INTERRUPTED, BadInput, CliError
from orchestrator.cli.options import echo_json, fleet_file_option, follow_option, json_option
from orchestrator.config.capacity import Capacity
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.models import default_model_missing_notice, default_model_partial_notice
from orchestrator.config.schema import fleet_schema
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.fleet.reconcile import fleet_labels, plan, remove_units
from orchestrator.images.names import DEFAULT_IMAGE
from orchestrator.state.check import check_state
from orchestrator.state.endpoint import Endpoint, read_endpoint
from orchestrator.state.paths import StatePaths


@click.command()
@fleet_file_option
@click.option(
    "--runtime",
    type=click.Choice(RUNTIMES),
    default=None,
    help="Check resources against this runtime's engine (default: the fleet's last, else docker).",
)
@json_option
def validate(fleet_file: Path, runtime: Runtime | None, as_json: bool) -> None:
    """Check fleet.yaml as `up` would; report every problem with file, line and field (exit code 2)."""
    paths = StatePaths.for_fleet_file(fleet_file)
    capacity, engine_note = _engine_capacity(_runtime_of(paths, runtime), paths)
    # A secret that cannot be read now is a warning here: `up` needs only those its agents use.
    fleet = load_or_exit(fleet_file, capacity, as_json=as_json, secrets=False)
    if as_json:
        echo_json(
            {
                "file": str(fleet_file),
                "valid": True,
                "fleet": fleet.name,
                "agents": sorted(fleet.config.agents),
                "warnings": list(fleet.warnings),
                "problems": [],
                "notes": [engine_note] if engine_note else [],
            }
        )
        return
    for warning in fleet.warnings:
        click.echo(f"warning: {warning}")
    count = len(fleet.config.agents)
    click.echo(f"{fleet_file}: fleet {fleet.name!r} is valid ({count} agent{'s' if count != 1 else ''})")
    if engine_note:
        click.echo(engine_note)


def _engine_capacity(runtime: Runtime, paths: StatePaths) -> tuple[Capacity | None, str]:
    """What the engine can give one agent, and a note when resources could not be checked."""
    if runtime == "process":
        return None, ""  # local processes get no limits: nothing to check them against
    try:
        backend = open_backend(runtime, paths)
    except BackendUnavailable as exc:
        return None, f"note: resources were not checked against an engine ({exc})"
    return backend.capacity(), ""


@click.command()
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the schema to this file (e.g. fleet.schema.json) instead of printing it.",
)
def schema(output: Path | None) -> None:
    """Print the JSON Schema of fleet.yaml, for editors.

    \b
    Editor help while typing (yaml-language-server: VS Code's YAML extension, Neovim, Helix...):
      flotilla schema -o fleet.schema.json
    and make this the first line of fleet.yaml:
      # yaml-language-server: $schema=fleet.schema.json
    """
    text = json.dumps(fleet_schema(), indent=2)
    if output is None:
        click.echo(text)
        return
    output.write_text(text + "\n", encoding="utf-8")
    click.echo(f"wrote {output}; make this the first line of fleet.yaml:")
    click.echo(f"# yaml-language-server: $schema={output}")


def _backend_or_exit(runtime: Runtime, paths: StatePaths, agent_listen: str | None = None) -> Backend:
    try:
        return open_backend(runtime, paths, agent_listen)
    except BackendUnavailable as exc:
        raise CliError(str(exc)) from None


def _why_runtime(paths: StatePaths, runtime: Runtime | None, fleet: LoadedFleet) -> str:
    if runtime:
        return "--runtime"
    if fleet.config.runtime:
        return "fleet.yaml"
    if remembered_runtime(paths):
        return "the one this fleet last ran on; --runtime changes it"
    return "the default"


def _runtime_of(paths: StatePaths, runtime: Runtime | None, fleet: LoadedFleet | None = None) -> Runtime:
    """The --runtime flag, else fleet.yaml's `runtime:`, else the one the fleet last ran on, else docker."""
    declared = fleet.config.runtime if fleet is not None else None
    return runtime or declared or remembered_runtime(paths) or "docker"


@click.command()
@fleet_file_option
@click.option(
    "-d",
    "--detach",
    is_flag=True,
    help="Run the orchestrator in the background (pid and log under .flotilla/).",
)
@click.option(
    "--runtime",
    type=click.Choice(RUNTIMES),
    default=None,
    help="Where agents run: docker (the default), swarm (Docker Swarm services), local processes, or "
    "external (a Kubernetes cluster runs them from `flotilla export kubernetes`; they dial in) "
    "(default: fleet.yaml's runtime, else the last one used).",
)
@click.option(
    "--agent-listen",
    default=None,
    metavar="ADDRESS",
    help="With --runtime external: the host's address the agents' pods dial (also listens there).",
)
@click.option(
    "--port", type=int, default=DEFAULT_PORT, show_default=True, help="The orchestrator's API port."
)
@click.option("--image", default=DEFAULT_IMAGE, show_default=True, help="The agent image (docker).")
@click.option("--log-json", is_flag=True, help="Write the orchestrator's log as JSON lines.")
@click.option(
    "-v", "--verbose", is_flag=True, help="Show an image build's output as it runs (else only on failure)."
)
@click.pass_context
def up(
    ctx: click.Context,
    fleet_file: Path,
    detach: bool,
    runtime: Runtime | None,
    agent_listen: str | None,
    port: int,
    image: str,
    log_json: bool,
    verbose: bool,
) -> None:
    """Start the orchestrator and reconcile the fleet: create, recreate or remove only what changed.

    With the orchestrator already running, the file given is applied to it.
    """
    from orchestrator.cli.detach import launch_detached
    from orchestrator.cli.launch_options import LaunchOptions

    paths = StatePaths.for_fleet_file(fleet_file)
    endpoint = read_endpoint(paths)
    if endpoint is not None:
        explicit_port = ctx.get_parameter_source("port") != click.core.ParameterSource.DEFAULT
        _refuse_other_launch(endpoint, paths, port if explicit_port else None, runtime)
        running = load_or_exit(fleet_file)
        _echo_embedding_notice(running)
        click.echo(f"the orchestrator is already running at {endpoint.url}; applying {fleet_file} to it")
        new_image = (
            image_for(fleet_file, running, False, verbose) if remembered_runtime(paths) == "docker" else None
        )
        _apply_remote(fleet_file, dry_run=False, image=new_image)
        return
    fleet = load_or_exit(fleet_file)
    _echo_embedding_notice(fleet)
    check_state(paths, Path.cwd())
    chosen = _runtime_of(paths, runtime, fleet)
    click.echo(f"runtime: {chosen} ({_why_runtime(paths, runtime, fleet)})")
    if (chosen == "external") != (agent_listen is not None):
        raise CliError(
            NEEDS_ADDRESS if chosen == "external" else "--agent-listen is for --runtime external only"
        )
    backend = _backend_or_exit(chosen, paths, agent_listen)
    check_capacity_or_exit(fleet, backend.capacity())
    options = LaunchOptions(chosen, port, image, log_json, verbose=verbose, agent_listen=agent_listen)
    if detach:
        launch_detached(fleet, options, paths)
    else:
        from orchestrator.cli.launch import run_foreground

        run_foreground(fleet, backend, options)


def _echo_embedding_notice(fleet: LoadedFleet) -> None:
    """Of the warnings `validate` prints, `up` repeats this one: without it, agents that searched
    memory by meaning would silently search by keyword."""
    notices = {default_model_missing_notice(), default_model_partial_notice()}
    for warning in fleet.warnings:
        if warning.message in notices:
            click.echo(f"warning: {warning}")


def _refuse_other_launch(
    endpoint: Endpoint, paths: StatePaths, port: int | None, runtime: Runtime | None
) -> None:
    """`up` with a running orchestrator may apply a file, not move it to another port or runtime."""
    running_port = urlsplit(endpoint.url).port
    if port is not None and port != running_port:
        raise CliError(
            f"the orchestrator of this fleet already runs on port {running_port} (pid {endpoint.pid}); "
            f"--port {port} would need a new one: `flotilla down` first, or drop --port to apply the file"
        )
    running_runtime = remembered_runtime(paths)
    if runtime is not None and running_runtime is not None and runtime != running_runtime:
        raise CliError(
            f"the orchestrator of this fleet already runs with --runtime {running_runtime}; "
            f"`flotilla down` first to move it to {runtime}"
        )


def _apply_remote(
    fleet_file: Path,
    dry_run: bool,
    force_seeds: tuple[tuple[str, str], ...] = (),
    as_json: bool = False,
    image: str | None = None,
    image_plan: ImagePlan | None = None,
) -> bool:
    """Ask the running orchestrator to plan or apply `fleet_file`; True when changes are (were) due.
    `image_plan`: what a dry run found about the agents' image (a new one, maybe to build)."""
    client = client_for(fleet_file, timeout_s=300.0)
    result = client.post(
        "/api/v1/apply",
        dry_run=dry_run or None,
        file=str(fleet_file.resolve()),
        force_seed=[f"{agent}/{file}" for agent, file in force_seeds] or None,
        image=image,
    )
    changed = bool(result["changed"]) or image_plan is not None
    if as_json:
        planned = {"image_change": image_plan.as_json()} if image_plan is not None else {}
        echo_json({"dry_run": dry_run, **result, "changed": changed, **planned})
        return changed
    for line in result["actions"]:
        click.echo(line)
    if image_plan is not None:
        click.echo(str(image_plan))
    if not changed:
        click.echo("nothing to change")
    return changed


EXIT_CHANGES_PENDING = 5
EXIT_CANNOT_PLAN = 3


@click.command()
@fleet_file_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan, naming the settings that change per agent; change nothing. "
    "Exit 0: nothing to change, 2: the file is invalid, 3: no plan could be made, 5: changes pending.",
)
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None)
@click.option(
    "--force-seed",
    "force_seeds",
    nargs=2,
    multiple=True,
    metavar="AGENT FILE",
    help="Take fleet.yaml's text for FILE (e.g. SOUL.md) of AGENT even though it changed since it was seeded.",
)
@json_option
@click.option(
    "-v", "--verbose", is_flag=True, help="Show an image build's output as it runs (else only on failure)."
)
def apply(
    fleet_file: Path,
    dry_run: bool,
    runtime: Runtime | None,
    force_seeds: tuple[tuple[str, str], ...],
    as_json: bool,
    verbose: bool,
) -> None:
    """Reconcile the running fleet with the fleet file given (--dry-run only prints the plan).

    Changed seeds (soul, instructions, user, interface, heartbeat rules) are written to the
    agents' workspaces when nobody changed those files since; otherwise apply names the conflict.
    """
    paths = StatePaths.for_fleet_file(fleet_file)
    if not dry_run:
        fleet = load_or_exit(fleet_file, as_json=as_json)
        if read_endpoint(paths) is None:
            raise CliError("no orchestrator is running: `flotilla up` starts it and applies fleet.yaml")
        image = (
            image_for(fleet_file, fleet, as_json, verbose) if remembered_runtime(paths) == "docker" else None
        )
        _apply_remote(fleet_file, dry_run=False, force_seeds=force_seeds, as_json=as_json, image=image)
        return
    try:
        pending = _dry_run(fleet_file, paths, runtime, force_seeds, as_json)
    except CliError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_CANNOT_PLAN) from None
    if pending:
        raise SystemExit(EXIT_CHANGES_PENDING)


def _dry_run(
    fleet_file: Path,
    paths: StatePaths,
    runtime: Runtime | None,
    force_seeds: tuple[tuple[str, str], ...],
    as_json: bool = False,
) -> bool:
    if read_endpoint(paths) is not None:
        fleet = load_or_exit(fleet_file, as_json=as_json)
        image = planned_image(fleet_file, fleet) if remembered_runtime(paths) == "docker" else None
        return _apply_remote(
            fleet_file, dry_run=True, force_seeds=force_seeds, as_json=as_json, image_plan=image
        )
    fleet = load_or_exit(fleet_file, as_json=as_json)
    backend = _backend_or_exit(_runtime_of(paths, runtime, fleet), paths)
    check_capacity_or_exit(fleet, backend.capacity())
    try:
        actions = [a for a in plan(fleet, backend.list(fleet_labels(fleet.name))) if a.pending]
    except BackendError as exc:
        raise CliError(str(exc)) from None
    if as_json:
        echo_json({"dry_run": True, "changed": bool(actions), "actions": [str(a) for a in actions]})
        return bool(actions)
    for action in actions:
        click.echo(str(action))
    if not actions:
        click.echo("nothing to change")
    return bool(actions)


@click.command()
@fleet_file_option
@follow_option("Keep printing new lines.")
@click.option(
    "-n", "--limit", "--tail", "tail", type=int, default=200, show_default=True, help="The last N lines."
)
@click.option(
    "--since",
    default=None,
    metavar="WHEN",
    help="Only lines from WHEN on: a duration back from now (10m, 2h, 1d) or a moment (2026-12-03 09:30).",
)
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None)
@click.argument("agent")
def logs(
    fleet_file: Path, follow: bool, tail: int, since: str | None, runtime: Runtime | None, agent: str
) -> None:
    """Print an agent's log (--since: from a moment on, by the stamps of its lines, in its clock).

    The log is printed raw, as `docker logs` does: what the agent wrote, control characters
    included. Pipe it through `less` or `cat -v` when the agent may be hostile."""
    from datetime import datetime

    from orchestrator.cli.log_since import lines_since, since_moment

    moment = since_moment(since, datetime.now()) if since else None
    fleet = load_or_exit(fleet_file, secrets=False)
    paths = StatePaths.for_fleet_file(fleet.path)
    backend = _backend_or_exit(_runtime_of(paths, runtime, fleet), paths)
    units = _units_of(backend, fleet, agent)
    try:
        # --since reads the whole log, then keeps the lines from the moment on (the last N of them).
        lines = backend.logs(units[0].id, follow=follow, tail=WHOLE_LOG if moment else tail)
        if moment is not None:
            lines = _last(lines_since(lines, moment), tail, follow)
        for line in lines:
            click.echo(line.rstrip("\n"))
    except KeyboardInterrupt:
        raise SystemExit(EXIT_INTERRUPTED) from None
    except BackendError as exc:
        raise CliError(str(exc)) from None


def _units_of(backend: Backend, fleet: LoadedFleet, agent: str) -> list[UnitInfo]:
    """The agent's units: BadInput for a name that is no agent of the fleet, CliError when it has none."""
    if agent not in fleet.config.agents:
        raise BadInput(unknown_agent(agent, fleet.name, fleet.config.agents))
    try:
        units = [u for u in backend.list(fleet_labels(fleet.name)) if u.agent == agent]
    except BackendError as exc:
        raise CliError(str(exc)) from None
    if not units:
        raise CliError(f"agent {agent!r} has no unit now; `flotilla ps` shows its state")
    return units


# As many lines as a log holds (`tail=0` means none to Docker).
WHOLE_LOG = 10_000_000


def _last(lines: Iterator[str], count: int, follow: bool) -> Iterator[str]:
    """The last `count` lines of what is there now, then (following) every new one as it comes."""
    if follow or not count:
        yield from lines
        return
    yield from deque(lines, maxlen=count)


@click.command()
@fleet_file_option
@click.option(
    "-v",
    "--volumes",
    is_flag=True,
    help="Also delete the fleet's state: the agents' storage (volumes, disks), state.db (inbox, "
    "ledger and budgets, events, approvals) and everything else under .flotilla/ but backups/ "
    "and previous-layout/.",
)
@click.option("--runtime", type=click.Choice(RUNTIMES), default=None)
def down(fleet_file: Path, volumes: bool, runtime: Runtime | None) -> None:
    """Stop the orchestrator and remove every unit (and network) of this fleet; state stays unless -v.

    The runtime the fleet ran on is forgotten: the next `up` runs on --runtime, fleet.yaml's
    `runtime:`, else docker.
    """
    fleet = load_or_exit(fleet_file, secrets=False)
    paths = StatePaths.for_fleet_file(fleet.path)
    _stop_orchestrator(paths)
    ran_on = _runtime_of(paths, runtime, fleet)
    backend = _backend_or_exit(ran_on, paths)
    try:
        remove_units(backend, fleet.name, lambda unit: click.echo(f"removed {unit.name}"))
        # Storage before the network: a network the engine will not let go of leaves no disk behind.
        for line in backend.release_storage(fleet.name, paths.root, delete=volumes):
            click.echo(line)
        backend.teardown_fleet(fleet.name)
    except BackendError as exc:
        again = "flotilla down -v" if volumes else "flotilla down"
        raise CliError(
            f"{exc}; what was removed stays removed: once that is fixed, run `{again}` again"
        ) from None
    paths.runtime_file.unlink(missing_ok=True)
    if volumes:
        _delete_state(paths)
    if ran_on != (fleet.config.runtime or "docker"):
        click.echo(
            f"the next `flotilla up` runs on {fleet.config.runtime or 'docker'} unless --runtime {ran_on}"
        )
    click.echo(f"fleet {fleet.name!r} is down")


STOP_WAIT_S = 15.0

# Kept by `down -v`: copies an operator restores from, and a previous layout's folders (never
# entered by the orchestrator), are not the fleet's state.
KEPT_BY_DOWN_V = ("backups", "previous-layout")


def _delete_state(paths: StatePaths) -> None:
    if read_endpoint(paths) is not None:
        raise CliError(f"the orchestrator did not stop; state under {paths.root} is kept")
    if not paths.root.is_dir():
        return
    for entry in paths.root.iterdir():
        if entry.name in KEPT_BY_DOWN_V:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    kept = [name for name in KEPT_BY_DOWN_V if (paths.root / name).exists()]
    click.echo(
        f"deleted the fleet's state under {paths.root}" + (f" (kept {', '.join(kept)}/)" if kept else "")
    )


def _stop_orchestrator(paths: StatePaths) -> None:
    endpoint = read_endpoint(paths)
    if endpoint is None:
        return
    os.kill(endpoint.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while read_endpoint(paths) is not None and _alive(endpoint.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(endpoint.pid):
        # Still closing its agents' connections: it must be gone before their units are removed,
        # or its supervisor would make them again (their state is safe: SQLite in WAL mode).
        os.kill(endpoint.pid, signal.SIGKILL)
        deadline = time.monotonic() + STOP_WAIT_S
        while _alive(endpoint.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    click.echo(f"stopped the orchestrator (pid {endpoint.pid})")


def _alive(pid: int) -> bool:
    """The process runs (an exited one that nobody reaped yet does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"

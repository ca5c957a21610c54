"""What every CLI command shares: the fleet-file option, the API client and error reporting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NoReturn

import click

from orchestrator.cli.client import ApiClient
from orchestrator.config.capacity import Capacity
from orchestrator.config.fleet import ConfigError, LoadedFleet
from orchestrator.config.loader import check_capacity, load_fleet

EXIT_INVALID_CONFIG = 2
DEFAULT_PORT = 8420


def client_for(fleet_file: Path, timeout_s: float = 30.0) -> ApiClient:
    return ApiClient.from_fleet_file(fleet_file, timeout_s)


def load_or_exit(
    fleet_file: Path,
    capacity: Capacity | None = None,
    *,
    contracts: bool = True,
    as_json: bool = False,
    secrets: bool = True,
) -> LoadedFleet:
    """Load the fleet, or print every problem (file:line: path: message) and exit with code 2.

    Warnings (things that work but are likely mistakes) are for `validate` to print. With
    `as_json`, the problems are printed as one JSON object on stdout. `secrets=False` is for
    commands that stop or look at a fleet: they never use a secret's value, so one that cannot
    be read (its environment variable unset) does not stop them.
    """
    # Imported here: the checks' packages load only for a command that reads fleet.yaml.
    from orchestrator.fleet.validation import register_fleet_checks

    register_fleet_checks()
    try:
        fleet = load_fleet(fleet_file, capacity, contracts=contracts, secrets=secrets)
    except ConfigError as exc:
        if as_json:
            _exit_with_json(fleet_file, exc)
        _exit_with(fleet_file, exc)
    return fleet


def check_capacity_or_exit(fleet: LoadedFleet, capacity: Capacity | None) -> None:
    """Refuse, as `load_or_exit` does, resources beyond what the engine can give."""
    try:
        check_capacity(fleet, capacity)
    except ConfigError as exc:
        _exit_with(fleet.path, exc)


def _exit_with_json(fleet_file: Path, exc: ConfigError) -> NoReturn:
    problems = [{"file": p.file, "line": p.line, "path": p.path, "message": p.message} for p in exc.problems]
    click.echo(json.dumps({"file": str(fleet_file), "valid": False, "problems": problems}, indent=2))
    raise SystemExit(EXIT_INVALID_CONFIG)


def _exit_with(fleet_file: Path, exc: ConfigError) -> NoReturn:
    for problem in exc.problems:
        click.echo(f"error: {problem}", err=True)
    count = len(exc.problems)
    click.echo(f"{fleet_file}: {count} problem{'s' if count != 1 else ''}; nothing was started", err=True)
    raise SystemExit(EXIT_INVALID_CONFIG)

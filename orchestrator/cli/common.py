"""What every CLI command shares: the fleet-file option, the API client and error reporting."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from orchestrator.cli.client import ApiClient
from orchestrator.config.loader import ConfigError, LoadedFleet, load_fleet

F = TypeVar("F", bound=Callable[..., Any])

EXIT_INVALID_CONFIG = 2
DEFAULT_PORT = 8420


def fleet_file_option(fn: F) -> F:
    decorated: F = click.option(
        "-f",
        "--file",
        "fleet_file",
        type=click.Path(path_type=Path, dir_okay=False),
        default=Path("fleet.yaml"),
        envvar="FLOTILLA_FILE",
        show_default=True,
        help="The fleet file (env FLOTILLA_FILE).",
    )(fn)
    return decorated


def client_for(fleet_file: Path, timeout_s: float = 30.0) -> ApiClient:
    return ApiClient.from_fleet_file(fleet_file, timeout_s)


def load_or_exit(fleet_file: Path) -> LoadedFleet:
    """Load the fleet, or print every problem (file:line: path: message) and exit with code 2."""
    try:
        return load_fleet(fleet_file)
    except ConfigError as exc:
        for problem in exc.problems:
            click.echo(f"error: {problem}", err=True)
        count = len(exc.problems)
        click.echo(f"{fleet_file}: {count} problem{'s' if count != 1 else ''}; nothing was started", err=True)
        raise SystemExit(EXIT_INVALID_CONFIG) from None

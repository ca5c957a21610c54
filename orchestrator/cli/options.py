"""The options every command spells the same way (see docs/cli.md).

-f/--file is the fleet file everywhere (`fleet_file_option`);
-F/--follow keeps printing; -n/--limit bounds how many records are shown; --json prints the
data as JSON instead of a table or sentence.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def follow_option(help: str) -> Callable[[F], F]:
    return click.option("-F", "--follow", is_flag=True, help=help)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, default=str))


def _fleet_file(*flags: str) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        decorated: F = click.option(
            *flags,
            "fleet_file",
            type=click.Path(path_type=Path, dir_okay=False),
            default=Path("fleet.yaml"),
            envvar="FLOTILLA_FILE",
            show_default=True,
            help="The fleet file (env FLOTILLA_FILE).",
        )(fn)
        return decorated

    return decorate


fleet_file_option = _fleet_file("-f", "--file")

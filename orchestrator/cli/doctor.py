"""`flotilla doctor [--json]`: checks the fleet on this machine and prints what is wrong with
the command that fixes it. Exit code: 0 nothing wrong · 1 warnings · 2 errors · 4 state.db
damaged."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from orchestrator.cli.common import client_for, load_or_exit
from orchestrator.cli.errors import CliError
from orchestrator.cli.options import echo_json, fleet_file_option, json_option
from orchestrator.cli.terminal import echo
from orchestrator.doctor.live_checks import LiveStatus
from orchestrator.doctor.models import DoctorReport
from orchestrator.doctor.run import diagnose
from orchestrator.images.names import DEFAULT_IMAGE
from orchestrator.state.check import EXIT_STATE_DAMAGED
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths

LIVE_TIMEOUT_S = 10.0
MARKS = {"ok": "ok     ", "warning": "warning", "error": "ERROR  "}


@click.command("doctor")
@fleet_file_option
@click.option("--image", default=DEFAULT_IMAGE, show_default=True, help="The agent image to look for.")
@json_option
def doctor(fleet_file: Path, image: str, as_json: bool) -> None:
    """Check state.db, backups, the engine, the image, volumes and quotas, the firewall chain,
    leftovers and stopped agents; print what is wrong and the command that fixes it.

    \b
    Exit codes: 0 nothing wrong · 1 warnings · 2 errors · 4 state.db damaged.
    """
    fleet = load_or_exit(fleet_file)
    report = diagnose(fleet, image, (Path.cwd(),), _live_status(fleet_file))
    if as_json:
        echo_json(report.model_dump(mode="json") | {"severity": report.severity})
    else:
        _print(report)
    sys.exit(report.exit_code(EXIT_STATE_DAMAGED))


def _live_status(fleet_file: Path) -> LiveStatus:
    """The running orchestrator's fleet status; nothing when none runs."""
    if read_endpoint(StatePaths.for_fleet_file(fleet_file)) is None:
        return LiveStatus()
    try:
        return LiveStatus(status=client_for(fleet_file, timeout_s=LIVE_TIMEOUT_S).get("/api/v1/fleet"))
    except CliError as failed:
        return LiveStatus(error=str(failed))


def _print(report: DoctorReport) -> None:
    echo(f"fleet {report.fleet} (runtime {report.runtime})")
    for finding in report.findings:
        echo(f"{MARKS[finding.severity]}  {finding.check:<12} {finding.summary}")
        if finding.fix and finding.severity != "ok":
            echo(f"{'':<9}  {'':<12} fix: {finding.fix}")
    echo(f"overall: {report.severity}")

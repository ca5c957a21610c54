"""`flotilla doctor [--json]`: checks the fleet on this machine and prints what is wrong with
the command that fixes it. Exit code: 0 nothing wrong · 1 warnings · 2 errors · 4 state.db
damaged."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from orchestrator.cli.common import load_or_exit
from orchestrator.cli.options import echo_json, fleet_file_option, json_option
from orchestrator.cli.terminal import echo
from orchestrator.doctor.models import DoctorReport
from orchestrator.doctor.run import diagnose
from orchestrator.images.names import DEFAULT_IMAGE
from orchestrator.state.check import EXIT_STATE_DAMAGED

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
    report = diagnose(load_or_exit(fleet_file), image, (Path.cwd(),))
    if as_json:
        echo_json(report.model_dump(mode="json") | {"severity": report.severity})
    else:
        _print(report)
    sys.exit(report.exit_code(EXIT_STATE_DAMAGED))


def _print(report: DoctorReport) -> None:
    echo(f"fleet {report.fleet} (runtime {report.runtime})")
    for finding in report.findings:
        echo(f"{MARKS[finding.severity]}  {finding.check:<12} {finding.summary}")
        if finding.fix and finding.severity != "ok":
            echo(f"{'':<9}  {'':<12} fix: {finding.fix}")
    echo(f"overall: {report.severity}")

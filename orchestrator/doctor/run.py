"""Runs every check that applies to the fleet's runtime, in a fixed order."""

from __future__ import annotations

from pathlib import Path

from orchestrator.backends.select import remembered_runtime
from orchestrator.config.fleet import LoadedFleet
from orchestrator.doctor import engine_checks
from orchestrator.doctor.live_checks import LiveStatus, check_live
from orchestrator.doctor.models import DoctorReport, Finding
from orchestrator.doctor.state_checks import check_backups, check_state_db
from orchestrator.lifecycle import stopped_in_file
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths


def diagnose(
    fleet: LoadedFleet, image: str, backup_folders: tuple[Path, ...] = (), live: LiveStatus | None = None
) -> DoctorReport:
    """`live`: what the running orchestrator answered, when one runs."""
    paths = StatePaths.for_fleet_file(fleet.path)
    runtime = remembered_runtime(paths) or "docker"
    state = check_state_db(paths, backup_folders)
    report = DoctorReport(fleet=fleet.name, runtime=runtime, findings=[state])
    report.findings.append(check_backups(paths, backup_folders))
    report.findings += check_live(live or LiveStatus())
    if runtime == "docker":
        report.findings += _docker_findings(fleet, paths, image, state_readable=state.severity == "ok")
    return report


def _docker_findings(
    fleet: LoadedFleet, paths: StatePaths, image: str, state_readable: bool
) -> list[Finding]:
    client, engine = engine_checks.connect()
    if client is None:
        return [engine]
    running = read_endpoint(paths) is not None
    findings = [engine, engine_checks.check_image(client, image)]
    findings += engine_checks.check_volumes(client, fleet, paths)
    findings.append(engine_checks.check_firewall(fleet.name, running))
    findings += engine_checks.check_leftovers(client, fleet, running)
    if state_readable and paths.db.exists():
        findings += engine_checks.check_held_stopped(client, fleet.name, stopped_in_file(paths.db))
    return findings

"""`flotilla backup`, `flotilla verify`, `flotilla restore`: one archive for a whole fleet."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import click

from orchestrator.backup.archive import BackupResult
from orchestrator.backup.restore import RestoreRefused, restore_archive
from orchestrator.backup.verify import Verdict, verify_archive
from orchestrator.cli.common import client_for
from orchestrator.cli.errors import CliError
from orchestrator.cli.options import fleet_file_option
from orchestrator.cli.terminal import echo, one_line

BACKUP_TIMEOUT_S = 6 * 3600.0


def _say(message: str) -> None:
    echo(one_line(message), err=True)


def default_output(fleet_file: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path.cwd() / f"flotilla-backup-{fleet_file.resolve().parent.name}-{stamp}.tar"


@click.command("backup")
@fleet_file_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The archive to write (default: ./flotilla-backup-FOLDER-TIME.tar).",
)
@click.option("--agent", default=None, help="Back up this agent only (its workspace and its own files).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def backup(fleet_file: Path, output: Path | None, agent: str | None, as_json: bool) -> None:
    """Back up the running fleet into one archive, while it works.

    \b
    Holds state.db (inboxes, ledger, budgets, runs), each agent's memory.db, history, learnings
    and daily logs (snapshotted by the agent), the operator's copies of the workspaces with their
    version history, fleet.yaml and the files it names. Never tokens nor provider keys.
    Check it with `flotilla verify FILE`.
    """
    target = (output or default_output(fleet_file)).resolve()
    client = client_for(fleet_file, timeout_s=BACKUP_TIMEOUT_S)
    result: BackupResult | None = None
    try:
        for event, data in client.stream(
            "POST", "/api/v1/backups", {"output": str(target), "agent": agent}, timeout_s=BACKUP_TIMEOUT_S
        ):
            body = json.loads(data)
            if event == "progress":
                _say(f"  {body['message']}")
            elif event == "error":
                raise CliError(f"backup failed: {body['message']}")
            elif event == "result":
                result = BackupResult.model_validate(body)
    finally:
        client.close()
    if result is None:
        raise CliError("the orchestrator ended the backup without a result: see .flotilla/orchestrator.log")
    if as_json:
        click.echo(result.model_dump_json(indent=2))
    else:
        echo(f"backup {result.path}: {result.size} bytes, {result.files} files, {result.seconds:.1f}s")
        echo(f"sha256 {result.sha256}")
    for part in result.agents:
        if part.complete and part.stopped:
            echo(
                f"note: agent {part.name} does not run: its files were read from its storage without it",
                err=True,
            )
    incomplete = [part for part in result.agents if not part.complete]
    for part in incomplete:
        echo(one_line(f"warning: agent {part.name} is incomplete: {part.problem}"), err=True)
    if incomplete:
        sys.exit(int(Verdict.INCOMPLETE))


@click.command("verify")
@click.argument("archive", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(archive: Path, as_json: bool) -> None:
    """Check a backup archive: sums, SQLite integrity, every agent complete.

    \b
    Exit codes: 0 sound · 4 an agent's part is incomplete · 5 damaged (a sum, a size or a
    database's integrity) · 6 not a readable backup (or of a newer format).
    """
    report = verify_archive(archive)
    if as_json:
        click.echo(report.model_dump_json(indent=2))
    else:
        manifest = report.manifest
        if manifest is not None:
            agents = (
                ", ".join(p.name + (" (stopped)" if p.stopped else "") for p in manifest.agents) or "none"
            )
            echo(
                one_line(
                    f"{archive}: fleet {manifest.fleet}, taken {manifest.created_at:%Y-%m-%d %H:%M:%S} UTC by "
                    f"flotilla {manifest.flotilla_version}; agents: {agents}"
                )
            )
            echo(f"checked {report.checked_files} files, {report.checked_databases} databases")
        for problem in report.problems:
            echo(one_line(f"error: {problem.message}"), err=True)
        if not report.problems:
            echo("ok")
    sys.exit(int(report.verdict))


@click.command("restore")
@fleet_file_option
@click.argument("archive", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--into",
    "target",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The folder to restore the fleet into (default: the fleet file's folder; empty unless --force).",
)
@click.option("--agent", default=None, help="Restore this agent only, into its fleet's folder.")
@click.option(
    "--force", is_flag=True, help="Restore into a folder that is not empty (replaces what is there)."
)
def restore(fleet_file: Path, archive: Path, target: Path | None, agent: str | None, force: bool) -> None:
    """Restore a backup into a folder; `flotilla up` there brings the fleet back.

    \b
    The fleet must be down. The agents' own files (memory, history, learnings) replace what
    their storage holds when the next `up` creates their units.
    --agent NAME restores one agent (from a full backup or one taken with --agent) into the
    folder of its fleet: its workspace now, its own files at the next `up`.
    """
    target = target or fleet_file.resolve().parent
    try:
        result = restore_archive(
            archive, target, only_agent=agent, force=force, progress=lambda m: _say(f"  {m}")
        )
    except RestoreRefused as refused:
        echo(one_line(f"error: {refused}"), err=True)
        sys.exit(refused.exit_code)
    echo(
        one_line(
            f"restored fleet {result.fleet} into {result.target}: {result.files} files, "
            f"agents {', '.join(result.agents) or 'none'}"
        )
    )
    for name in result.incomplete:
        echo(f"warning: agent {name} was incomplete in the backup: it starts without its own files", err=True)
    echo("the agents' own files (memory, history, learnings) go into their storage at the next `up`")
    echo(f"start it with: cd {result.target} && flotilla up")

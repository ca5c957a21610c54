"""Restoring a backup archive into a fleet folder.

The archive is verified first. Host-side parts go where they live (fleet files next to
fleet.yaml, state.db and the operator's copies under .flotilla/); each agent's own files wait in
`.flotilla/restore/<agent>/` and are carried into the agent's new storage by the next `up`,
inside a throwaway container of the agent's image (the same path that moves a previous-layout
folder), so the orchestrator never writes where an agent can. A target that already holds a
fleet is refused unless forced.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from orchestrator.backup.manifest import AGENTS_PREFIX, FLEET_PREFIX, MANIFEST_NAME, STATE_DB, Manifest
from orchestrator.backup.snapshot import safe_relative
from orchestrator.backup.verify import Verdict, open_archive, read_manifest, verify_archive
from orchestrator.state.paths import StatePaths

Progress = Callable[[str], None]
READ_BLOCK = 1024 * 1024
RESTORE_FOLDER = "restore"


class RestoreRefused(Exception):
    """The restore was not started; the message says why and what to do."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class RestoreResult(BaseModel):
    target: str
    fleet: str
    agents: list[str]
    files: int
    incomplete: list[str]


def pending_restore(paths: StatePaths, agent: str) -> Path:
    """Where an agent's own files from a backup wait for its new storage."""
    return paths.root / RESTORE_FOLDER / agent


def orchestrator_alive(paths: StatePaths) -> bool:
    """An orchestrator serves this folder: its endpoint file names a live process (a clean
    stop removes the file; a zombie left by a killed one does not count)."""
    try:
        pid = int(json.loads(paths.endpoint_file.read_text())["pid"])
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _occupied(target: Path) -> list[str]:
    if not target.exists():
        return []
    return sorted(p.name for p in target.iterdir())


def restore_archive(
    archive: Path,
    target: Path,
    *,
    only_agent: str | None = None,
    force: bool = False,
    progress: Progress = lambda _: None,
) -> RestoreResult:
    progress(f"verifying {archive.name}")
    report = verify_archive(archive)
    if report.manifest is None or report.verdict in (Verdict.DAMAGED, Verdict.UNREADABLE):
        problems = "; ".join(p.message for p in report.problems[:5])
        raise RestoreRefused(f"{archive} fails verification: {problems}", int(report.verdict))
    manifest = report.manifest
    agents = _chosen_agents(manifest, only_agent)
    paths = StatePaths(target.resolve() / ".flotilla")
    _check_target(target, paths, manifest, only_agent, force)
    incomplete = [part.name for part in manifest.agents if part.name in agents and not part.complete]
    files = 0
    with open_archive(archive) as tar:
        read_manifest(tar)
        for member in tar:
            if member.name == MANIFEST_NAME:
                continue
            destination = _destination(member.name, target, paths, agents, only_agent)
            if destination is None:
                continue
            if files == 0 or member.name.endswith(".db"):
                progress(f"restoring {member.name} ({member.size} bytes)")
            _extract(tar, member, destination, manifest)
            files += 1
    paths.root.chmod(0o700)
    return RestoreResult(
        target=str(target.resolve()), fleet=manifest.fleet, agents=agents, files=files, incomplete=incomplete
    )


def _chosen_agents(manifest: Manifest, only_agent: str | None) -> list[str]:
    names = [part.name for part in manifest.agents]
    if only_agent is None:
        if manifest.only_agent is not None:
            raise RestoreRefused(
                f"the archive holds agent {manifest.only_agent} only: restore it with --agent {manifest.only_agent}"
            )
        return names
    if only_agent not in names:
        raise RestoreRefused(
            f"the archive holds no agent {only_agent!r}; it holds: {', '.join(names) or 'none'}"
        )
    return [only_agent]


def _check_target(
    target: Path, paths: StatePaths, manifest: Manifest, only_agent: str | None, force: bool
) -> None:
    if only_agent is None:
        occupied = _occupied(target)
        if occupied and not force:
            shown = ", ".join(occupied[:5])
            raise RestoreRefused(
                f"{target} is not empty ({shown}): restore into an empty folder, or add --force"
            )
        if orchestrator_alive(paths) and not force:
            raise RestoreRefused(f"an orchestrator may be running in {target}: run `flotilla down` first")
        target.mkdir(parents=True, exist_ok=True)
        paths.ensure()
        for stale in ("-wal", "-shm"):  # a forced restore must not replay the old database's log
            paths.db.with_name(paths.db.name + stale).unlink(missing_ok=True)
        return
    if not (target / "fleet.yaml").is_file():
        raise RestoreRefused(
            f"{target} holds no fleet.yaml: restore agent {only_agent} into its fleet's folder"
        )
    if orchestrator_alive(paths):
        raise RestoreRefused(f"the fleet in {target} may be running: run `flotilla down` first")
    if paths.agent_dir(only_agent).exists() and not force:
        raise RestoreRefused(
            f"agent {only_agent} already has a workspace in {target}: add --force to replace it"
        )
    shutil.rmtree(paths.agent_dir(only_agent), ignore_errors=True)
    shutil.rmtree(pending_restore(paths, only_agent), ignore_errors=True)


def _destination(
    name: str, target: Path, paths: StatePaths, agents: list[str], only_agent: str | None
) -> Path | None:
    relative = safe_relative(name)
    if name.startswith(FLEET_PREFIX):
        return None if only_agent else target / relative.relative_to("fleet")
    if name == STATE_DB:
        return None if only_agent else paths.db
    if name.startswith(AGENTS_PREFIX):
        _, agent, part, *rest = relative.parts
        if agent not in agents or not rest:
            return None
        inside = Path(*rest)
        if part == "operator":
            return paths.agent_dir(agent) / inside
        if part == "own":
            return pending_restore(paths, agent) / inside
    return None


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo, destination: Path, manifest: Manifest) -> None:
    """One regular member, written atomically and checked against the manifest on the way."""
    entry = next(e for e in manifest.entries if e.path == member.name)
    handle = tar.extractfile(member)
    if handle is None:
        raise RestoreRefused(f"{member.name} cannot be read from the archive")
    destination.parent.mkdir(parents=True, exist_ok=True)
    partial = destination.with_name(destination.name + ".tmp")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for block in iter(lambda: handle.read(READ_BLOCK), b""):
            digest.update(block)
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    if digest.hexdigest() != entry.sha256:
        partial.unlink()
        raise RestoreRefused(f"{member.name} changed while it was restored (its sum does not match)", 5)
    os.utime(partial, (member.mtime, member.mtime))
    partial.replace(destination)


def pending_restores(paths: StatePaths, agents: list[str] | tuple[str, ...]) -> dict[str, Path]:
    """Agents whose own files from a backup wait for their new storage."""
    return {agent: folder for agent in agents if (folder := pending_restore(paths, agent)).is_dir()}


def restore_carried(paths: StatePaths, agent: str) -> None:
    """The agent's unit was created with its restored files: they no longer wait."""
    shutil.rmtree(pending_restore(paths, agent), ignore_errors=True)

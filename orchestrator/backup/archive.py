"""Taking a backup of a running fleet into one tar archive with its manifest.

The host-side parts (fleet files, state.db, operator copies) are copied by the orchestrator;
each agent's own files are snapshotted by the agent and fetched over its link. Everything is
staged in a folder next to the output, summed, and written as a tar whose first member is the
manifest; the archive appears under its name only once complete (temp file, fsync, rename).
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from pydantic import BaseModel

from agent_runtime.protocol import SnapshotListing
from orchestrator.backup.manifest import (
    MANIFEST_NAME,
    STATE_DB,
    AgentPart,
    ArchiveEntry,
    EntryKind,
    Formats,
    Manifest,
    operator_prefix,
    own_prefix,
)
from orchestrator.backup.snapshot import (
    DEFAULT_PART_LIMITS,
    AskAgent,
    PartLimits,
    SnapshotFailed,
    fetch_snapshot,
)
from orchestrator.backup.sources import (
    copy_state_db,
    copy_tree,
    fleet_file_version,
    fleet_folder_files,
)
from orchestrator.backup.stopped_agents import StoppedSnapshots
from orchestrator.config.wrong_names import unknown_agent
from orchestrator.state.paths import StatePaths

Progress = Callable[[str], None]
READ_BLOCK = 1024 * 1024
# One backup at a time: each agent keeps one snapshot, which a second backup would replace.
_one_at_a_time = asyncio.Lock()


@dataclass(frozen=True)
class FleetSources:
    """Where a fleet's host-side parts are, and who its agents are."""

    fleet: str
    fleet_file: Path
    paths: StatePaths
    agents: tuple[str, ...]
    part_limits: dict[str, PartLimits] = field(default_factory=dict)


class BackupResult(BaseModel):
    path: str
    size: int
    sha256: str
    seconds: float
    agents: list[AgentPart]
    files: int


class BackupRefused(Exception):
    """The backup cannot be taken as asked (unknown agent, unwritable output); the message says why."""


def flotilla_version() -> str:
    try:
        return version("flotilla")
    except PackageNotFoundError:
        return "unknown"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        for block in iter(lambda: source.read(READ_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


async def take_backup(
    sources: FleetSources,
    ask: AskAgent,
    output: Path,
    *,
    only_agent: str | None = None,
    progress: Progress = lambda _: None,
    stopped: StoppedSnapshots | None = None,
) -> BackupResult:
    """Back the fleet (or one agent) up into `output`. `stopped` snapshots the agents that do
    not run (without it their part is incomplete)."""
    async with _one_at_a_time:
        return await _take_backup(sources, ask, output, only_agent, progress, stopped)


async def _take_backup(
    sources: FleetSources,
    ask: AskAgent,
    output: Path,
    only_agent: str | None,
    progress: Progress,
    stopped: StoppedSnapshots | None,
) -> BackupResult:
    started = time.monotonic()
    if only_agent is not None and only_agent not in sources.agents:
        raise BackupRefused(unknown_agent(only_agent, sources.fleet, sources.agents))
    output = output.resolve()
    if not output.parent.is_dir():
        raise BackupRefused(f"the folder {output.parent} does not exist")
    staging = Path(tempfile.mkdtemp(prefix=".flotilla-backup-", dir=output.parent))
    try:
        manifest = Manifest(fleet=sources.fleet, flotilla_version=flotilla_version(), only_agent=only_agent)
        manifest.formats = Formats(fleet_file=fleet_file_version(sources.fleet_file))
        kinds: dict[str, tuple[EntryKind, str | None]] = {}
        await asyncio.to_thread(_stage_fleet_files, sources, staging, kinds)
        if only_agent is None:
            progress("state.db")
            manifest.formats.state_schema = await asyncio.to_thread(
                copy_state_db, sources.paths.db, staging / STATE_DB
            )
            kinds[STATE_DB] = ("state", None)
        for agent in (only_agent,) if only_agent else sources.agents:
            manifest.agents.append(await _stage_agent(sources, ask, stopped, agent, staging, kinds, progress))
        manifest.entries = await asyncio.to_thread(_entries, staging, kinds)
        progress(f"writing {output.name}")
        await asyncio.to_thread(_write_tar, staging, manifest, output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return BackupResult(
        path=str(output),
        size=output.stat().st_size,
        sha256=await asyncio.to_thread(sha256_of, output),
        seconds=round(time.monotonic() - started, 3),
        agents=manifest.agents,
        files=len(manifest.entries),
    )


def _stage_fleet_files(
    sources: FleetSources, staging: Path, kinds: dict[str, tuple[EntryKind, str | None]]
) -> None:
    root = sources.fleet_file.parent.resolve()
    for path in fleet_folder_files(sources.fleet_file):
        name = "fleet/" + (
            "fleet.yaml" if path == sources.fleet_file.resolve() else path.relative_to(root).as_posix()
        )
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, staging / name)
        kinds[name] = ("fleet", None)


async def _stage_agent(
    sources: FleetSources,
    ask: AskAgent,
    stopped: StoppedSnapshots | None,
    agent: str,
    staging: Path,
    kinds: dict[str, tuple[EntryKind, str | None]],
    progress: Progress,
) -> AgentPart:
    progress(f"agent {agent}: operator's copy")
    operator_root = staging / operator_prefix(agent)
    await asyncio.to_thread(copy_tree, sources.paths.agent_dir(agent), operator_root)
    _record(staging, operator_root, "operator", agent, kinds)
    progress(f"agent {agent}: its own files (memory, history, learnings)")
    own_root = staging / own_prefix(agent)
    limits = sources.part_limits.get(agent, DEFAULT_PART_LIMITS)
    try:
        async with asyncio.timeout(limits.deadline_s):
            found = await _own_files(ask, stopped, agent, own_root, limits, progress)
    except TimeoutError:
        found = (
            f"agent {agent}'s own files took longer than limits.backup_part_time = "
            f"{limits.deadline_s:g}s: given up"
        )
    if isinstance(found, str):
        shutil.rmtree(own_root, ignore_errors=True)
        progress(f"agent {agent}: INCOMPLETE: {found}")
        return AgentPart(name=agent, complete=False, problem=found)
    listing, taken_stopped = found
    _record(staging, own_root, "own", agent, kinds)
    has_memory = any(entry.path == "memory.db" for entry in listing.files)
    return AgentPart(
        name=agent,
        complete=True,
        memory_schema=listing.memory_schema,
        has_memory=has_memory,
        stopped=taken_stopped,
    )


async def _own_files(
    ask: AskAgent,
    stopped: StoppedSnapshots | None,
    agent: str,
    own_root: Path,
    limits: PartLimits,
    progress: Progress,
) -> tuple[SnapshotListing, bool] | str:
    """The agent's own files under `own_root` and whether they were read without it (it does not
    run), or why there are none."""
    try:
        if stopped is not None and await stopped.kept_stopped(agent):
            raise SnapshotFailed(f"agent {agent} is stopped by the operator")
        return await fetch_snapshot(ask, agent, own_root, limits), False
    except SnapshotFailed as failed:
        shutil.rmtree(own_root, ignore_errors=True)
        found = await _snapshot_stopped(stopped, agent, own_root, failed, limits, progress)
    return found if isinstance(found, str) else (found, True)


async def _snapshot_stopped(
    stopped: StoppedSnapshots | None,
    agent: str,
    into: Path,
    failed: SnapshotFailed,
    limits: PartLimits,
    progress: Progress,
) -> SnapshotListing | str:
    """The snapshot of an agent that did not answer because it does not run, or why there is none."""
    if stopped is None:
        return str(failed)
    try:
        listing = await stopped.fetch(agent, into, limits)
    except SnapshotFailed as also_failed:
        shutil.rmtree(into, ignore_errors=True)
        return f"{failed}; {also_failed}"
    if listing is None:
        return str(failed)
    progress(f"agent {agent}: does not run; its files were read from its storage without it")
    return listing


def _record(
    staging: Path, root: Path, kind: EntryKind, agent: str, kinds: dict[str, tuple[EntryKind, str | None]]
) -> None:
    if not root.is_dir():
        return
    for path in root.rglob("*"):
        if path.is_file():
            kinds[path.relative_to(staging).as_posix()] = (kind, agent)


def _entries(staging: Path, kinds: dict[str, tuple[EntryKind, str | None]]) -> list[ArchiveEntry]:
    return [_entry(staging, name, *kinds[name]) for name in sorted(kinds)]


def _entry(staging: Path, name: str, kind: EntryKind, agent: str | None) -> ArchiveEntry:
    path = staging / name
    return ArchiveEntry(path=name, size=path.stat().st_size, sha256=sha256_of(path), kind=kind, agent=agent)


def _write_tar(staging: Path, manifest: Manifest, output: Path) -> None:
    partial = output.with_name(output.name + ".tmp")
    body = manifest.model_dump_json(indent=2).encode()
    try:
        with partial.open("wb") as raw:
            with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
                info = tarfile.TarInfo(MANIFEST_NAME)
                info.size, info.mtime, info.mode = len(body), int(time.time()), 0o600
                tar.addfile(info, io.BytesIO(body))
                for entry in manifest.entries:
                    tar.add(staging / entry.path, arcname=entry.path, recursive=False)
            raw.flush()
            os.fsync(raw.fileno())
        partial.chmod(0o600)
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)

"""An agent's own files, fetched over its link: the agent snapshots them, the orchestrator
reads the snapshot in capped chunks and checks each file's size and SHA-256.

The agent is untrusted. Before anything is written its listing is checked whole: no more files
than `limits.backup_files`, no more bytes than its disk quota, and names that can be written as
they are (plain relative paths, no control character, no part over 255 bytes nor a path over
1024, no name listed twice or as both a file and a folder). The data it sends may not exceed
the sizes it declared, and a file whose sum does not match fails the agent's part of the backup
(named in the manifest), never the whole backup.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from agent_runtime.protocol import AgentOp, SnapshotChunk, SnapshotFile, SnapshotListing
from orchestrator.config.limits import LimitsConfig
from orchestrator.config.models import ResourcesConfig

Model = TypeVar("Model", bound=BaseModel)

# What a filesystem takes for one name and what a backup accepts for a whole path, in bytes.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 1024
# C0 (NUL and newline included), DEL and C1.
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
SHOWN_NAME = 80
# How long an agent is given to drop its snapshot once its part is done (or given up).
DROP_S = 5.0


@dataclass(frozen=True)
class PartLimits:
    """What one agent's own part of a backup may hold, and how long it may take."""

    max_bytes: int
    max_files: int
    deadline_s: float


class SnapshotFailed(Exception):
    """The agent's snapshot could not be had; the message names the agent and why."""


def _default_part_limits() -> PartLimits:
    limits = LimitsConfig()
    return PartLimits(
        max_bytes=ResourcesConfig().disk_bytes,
        max_files=limits.backup_files,
        deadline_s=limits.backup_part_time_s,
    )


DEFAULT_PART_LIMITS = _default_part_limits()


class AskAgent(Protocol):
    """Asks an agent over its link (waking it if it sleeps); raises SnapshotFailed."""

    async def __call__(self, agent: str, op: AgentOp, body: dict[str, Any], model: type[Model]) -> Model: ...


class Dropped(BaseModel):
    dropped: bool


def _shown(path: str) -> str:
    """A name as a message shows it: escaped, and cut when long."""
    shown = repr(path)
    return shown if len(shown) <= SHOWN_NAME else shown[: SHOWN_NAME - 3] + "..."


def safe_relative(path: str) -> PurePosixPath:
    """A relative path with no '..', no '.', no root and no empty part, or ValueError. The raw
    parts are checked: PurePosixPath would quietly drop a '.' or a doubled '/'."""
    parts = path.split("/")
    if not path or any(part in ("..", ".", "") for part in parts):
        raise ValueError(f"{_shown(path)} is not a plain relative path")
    return PurePosixPath(path)


def name_problem(path: str) -> str | None:
    """Why `path` cannot be written as it is under the staging folder, or None."""
    if CONTROL.search(path):
        return f"{_shown(path)} holds a control character"
    if len(path.encode()) > MAX_PATH_BYTES:
        return f"{_shown(path)} is longer than {MAX_PATH_BYTES} bytes"
    try:
        pure = safe_relative(path)
    except ValueError as bad:
        return str(bad)
    if any(len(part.encode()) > MAX_NAME_BYTES for part in pure.parts):
        return f"a part of {_shown(path)} is longer than {MAX_NAME_BYTES} bytes"
    return None


def check_listing(agent: str, listing: SnapshotListing, limits: PartLimits) -> None:
    """Refuses (SnapshotFailed) a listing that the agent's part may not hold, before any file
    of it is asked for or written."""
    files = listing.files
    if len(files) > limits.max_files:
        raise SnapshotFailed(
            f"agent {agent} listed {len(files)} files, more than limits.backup_files = {limits.max_files}"
        )
    total = sum(entry.size for entry in files)
    if total > limits.max_bytes:
        raise SnapshotFailed(
            f"agent {agent} listed {total} bytes, more than its disk quota of {limits.max_bytes} bytes "
            "(resources.disk)"
        )
    listed: set[str] = set()
    folders: set[str] = set()
    for entry in files:
        try:
            safe_relative(entry.path)
        except ValueError as bad:
            raise SnapshotFailed(f"agent {agent} named a file outside its snapshot: {bad}") from None
        if (problem := name_problem(entry.path)) is not None:
            raise SnapshotFailed(f"agent {agent} listed a name that cannot be written: {problem}")
        if entry.path in listed:
            raise SnapshotFailed(f"agent {agent} listed {_shown(entry.path)} twice")
        listed.add(entry.path)
        parts = entry.path.split("/")
        folders.update("/".join(parts[:end]) for end in range(1, len(parts)))
    if clash := sorted(listed & folders):
        raise SnapshotFailed(f"agent {agent} listed {_shown(clash[0])} as both a file and a folder")


async def fetch_snapshot(
    ask: AskAgent, agent: str, into: Path, limits: PartLimits = DEFAULT_PART_LIMITS
) -> SnapshotListing:
    """The agent's own files, written under `into` and checked; the agent's snapshot is dropped."""
    listing = await ask(agent, AgentOp.SNAPSHOT_TAKE, {}, SnapshotListing)
    try:
        check_listing(agent, listing, limits)
        for entry in listing.files:
            await _fetch_file(ask, agent, entry, into)
    finally:
        await _drop(ask, agent)
    return listing


async def _drop(ask: AskAgent, agent: str) -> None:
    """Lets the agent remove its snapshot; an agent that does not answer soon keeps it (its own
    storage), and holds nothing up."""
    with contextlib.suppress(SnapshotFailed, TimeoutError):
        async with asyncio.timeout(DROP_S):
            await ask(agent, AgentOp.SNAPSHOT_DROP, {}, Dropped)


async def _fetch_file(ask: AskAgent, agent: str, entry: SnapshotFile, into: Path) -> None:
    try:
        target = into / safe_relative(entry.path)
    except ValueError as bad:
        raise SnapshotFailed(f"agent {agent} named a file outside its snapshot: {bad}") from None
    try:
        await _write_file(ask, agent, entry, target)
    except OSError as failed:
        raise SnapshotFailed(
            f"agent {agent}'s {_shown(entry.path)} could not be written: {failed.strerror}"
        ) from None


async def _write_file(ask: AskAgent, agent: str, entry: SnapshotFile, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    offset = 0
    with target.open("xb") as out:
        while True:
            chunk = await ask(
                agent, AgentOp.SNAPSHOT_READ, {"path": entry.path, "offset": offset}, SnapshotChunk
            )
            try:
                data = base64.b64decode(chunk.data, validate=True)
            except binascii.Error:
                raise SnapshotFailed(f"agent {agent} sent {entry.path} in a bad encoding") from None
            offset += len(data)
            if offset > entry.size:
                raise SnapshotFailed(
                    f"agent {agent} sent more of {entry.path} than the {entry.size} bytes it listed"
                )
            out.write(data)
            digest.update(data)
            if chunk.eof or not data:
                break
    if offset != entry.size or digest.hexdigest() != entry.sha256:
        raise SnapshotFailed(
            f"agent {agent}'s {entry.path} arrived with {offset} bytes and sum {digest.hexdigest()[:12]}, "
            f"not the {entry.size} bytes and sum {entry.sha256[:12]} it listed"
        )

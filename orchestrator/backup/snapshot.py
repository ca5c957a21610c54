"""An agent's own files, fetched over its channel: the agent snapshots them, the orchestrator
reads the snapshot in capped chunks and checks each file's size and SHA-256.

The agent is untrusted: the paths it names are checked to stay inside the staging folder, the
data it sends may not exceed the sizes it declared, and a file whose sum does not match fails
the agent's part of the backup (named in the manifest), never the whole backup.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path, PurePosixPath
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from agent_runtime.protocol import AgentOp, SnapshotChunk, SnapshotFile, SnapshotListing

Model = TypeVar("Model", bound=BaseModel)


class SnapshotFailed(Exception):
    """The agent's snapshot could not be had; the message names the agent and why."""


class AskAgent(Protocol):
    """Asks an agent over its channel (waking it if it hibernates); raises SnapshotFailed."""

    async def __call__(self, agent: str, op: AgentOp, body: dict[str, Any], model: type[Model]) -> Model: ...


class Dropped(BaseModel):
    dropped: bool


def safe_relative(path: str) -> PurePosixPath:
    """A relative path with no '..', no root and no empty part, or ValueError."""
    pure = PurePosixPath(path)
    if pure.is_absolute() or not pure.parts or any(part in ("..", ".", "") for part in pure.parts):
        raise ValueError(f"{path!r} is not a plain relative path")
    return pure


async def fetch_snapshot(ask: AskAgent, agent: str, into: Path) -> SnapshotListing:
    """The agent's own files, written under `into` and checked; the agent's snapshot is dropped."""
    listing = await ask(agent, AgentOp.SNAPSHOT_TAKE, {}, SnapshotListing)
    try:
        for entry in listing.files:
            await _fetch_file(ask, agent, entry, into)
    finally:
        await ask(agent, AgentOp.SNAPSHOT_DROP, {}, Dropped)
    return listing


async def _fetch_file(ask: AskAgent, agent: str, entry: SnapshotFile, into: Path) -> None:
    try:
        target = into / safe_relative(entry.path)
    except ValueError as bad:
        raise SnapshotFailed(f"agent {agent} named a file outside its snapshot: {bad}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    offset = 0
    with target.open("wb") as out:
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

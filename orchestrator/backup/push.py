"""Handing an agent its own files over its link: the restore side of a snapshot.

Used where the orchestrator cannot reach the agent's storage through an engine on this machine
(a swarm volume on any node): the agent runs on its fresh storage, receives the snapshot in
checked chunks (`restore.begin`, `restore.write`, `restore.commit`; the agent's own writer,
agent_runtime.workspace.restore, checks paths, sizes and sums), then restarts in place on the
restored files. The folder handed over holds the files as a snapshot lists them (relative to the
agent's /data): a backup's `agents/NAME/own/` part, or a snapshot fetched from a running agent.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import time
from pathlib import Path

from agent_runtime.protocol import AgentOp, FileListing, RestoreApplied, RestoreStaged, SnapshotFile
from orchestrator.backup.snapshot import AskAgent, Dropped, SnapshotFailed, safe_relative
from orchestrator.running_agents.requests import AgentLinks

PUSH_CHUNK_BYTES = 32 * 1024
"""Raw bytes per chunk: base64 of it stays well inside the smallest channel frame allowed."""
CLOSE_WAIT_S = 30.0
POLL_S = 0.2


def snapshot_files(folder: Path) -> list[SnapshotFile]:
    """The regular files under `folder` (links skipped, never followed), with sizes and sums."""
    found: list[SnapshotFile] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() or not path.is_file():
                continue
            digest = hashlib.sha256()
            with path.open("rb") as source:
                for block in iter(lambda: source.read(1024 * 1024), b""):
                    digest.update(block)
            relative = path.relative_to(folder).as_posix()
            safe_relative(relative)
            found.append(SnapshotFile(path=relative, size=path.stat().st_size, sha256=digest.hexdigest()))
    return found


async def push_snapshot(ask: AskAgent, agent: str, folder: Path) -> RestoreApplied:
    """Hand the files under `folder` to `agent`, which checks them, replaces its own files with
    them and restarts; SnapshotFailed (the agent's storage unchanged) if it refuses any."""
    files = snapshot_files(folder)
    await ask(agent, AgentOp.RESTORE_BEGIN, {"files": [f.model_dump() for f in files]}, RestoreStaged)
    try:
        for entry in files:
            await _push_file(ask, agent, folder, entry)
        return await ask(agent, AgentOp.RESTORE_COMMIT, {}, RestoreApplied)
    except SnapshotFailed:
        await _abort(ask, agent)
        raise


async def _push_file(ask: AskAgent, agent: str, folder: Path, entry: SnapshotFile) -> None:
    with (folder / entry.path).open("rb") as source:
        offset = 0
        while block := source.read(PUSH_CHUNK_BYTES):
            body = {"path": entry.path, "offset": offset, "data": base64.b64encode(block).decode()}
            await ask(agent, AgentOp.RESTORE_WRITE, body, RestoreStaged)
            offset += len(block)


async def _abort(ask: AskAgent, agent: str) -> None:
    # An agent that is gone has its staging folder dropped by its next restore.
    with contextlib.suppress(SnapshotFailed):
        await ask(agent, AgentOp.RESTORE_ABORT, {}, Dropped)


async def answers_after_restart(ask: AskAgent, links: AgentLinks, agent: str, within_s: float) -> None:
    """Wait for the agent's restart on its restored files (its link closes, then opens again)
    and for it to answer; SnapshotFailed if it does not within `within_s`."""
    deadline = time.monotonic() + within_s
    closed_by = min(deadline, time.monotonic() + CLOSE_WAIT_S)
    while links.is_open(agent) and time.monotonic() < closed_by:
        await asyncio.sleep(POLL_S)
    problem = "it did not restart"
    while time.monotonic() < deadline:
        if await links.wait_open(agent, max(deadline - time.monotonic(), 0.0)):
            try:
                await ask(agent, AgentOp.FILES_LIST, {"folder": "memory"}, FileListing)
                return
            except SnapshotFailed as failed:
                problem = str(failed)
                await asyncio.sleep(POLL_S)
    raise SnapshotFailed(f"agent {agent} did not answer after its restore within {within_s:g}s: {problem}")

"""The own files of an agent that cannot answer because it does not run (stopped by the operator,
crashed): the agent's snapshot code is run without the agent, by the runtime, in the agent's
confinement with its storage read-only (`Backend.snapshot_stopped`). What that run writes is
read like the agent's answers over its link (`fetch_snapshot`): the same listing, the same
chunks, the same checks of paths, sizes and sums. An agent whose unit runs but does not answer
is not read this way: its files may be changing under it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agent_runtime.protocol import AgentOp, SnapshotChunk, SnapshotListing
from orchestrator.backends.base import Backend, BackendError, StoppedStorage, UnitInfo
from orchestrator.backup.snapshot import (
    DEFAULT_PART_LIMITS,
    Model,
    PartLimits,
    SnapshotFailed,
    fetch_snapshot,
)

# A chunk line: at most 1 MiB of data (the snapshot's chunk size) in base64 plus its JSON frame.
LINE_MAX = 2 * 1024 * 1024


class StreamedSnapshot:
    """Answers `fetch_snapshot`'s asks from the lines of one snapshot run, in the order it wrote
    them (the listing, then each file's chunks): an ask the stream does not answer in order
    fails the agent's part."""

    def __init__(self, agent: str, blocks: Iterator[bytes]) -> None:
        self._agent = agent
        self._blocks = blocks
        self._buffer = bytearray()

    async def __call__(self, agent: str, op: AgentOp, body: dict[str, Any], model: type[Model]) -> Model:
        if op is AgentOp.SNAPSHOT_DROP:
            return model.model_validate({"dropped": True})
        line = await asyncio.to_thread(self._next_line)
        try:
            answer = model.model_validate_json(line)
        except ValidationError as bad:
            raise SnapshotFailed(
                f"agent {agent}'s stopped snapshot wrote a bad {op.value} line: {bad}"
            ) from None
        if isinstance(answer, SnapshotChunk) and (answer.path, answer.offset) != (
            body["path"],
            body["offset"],
        ):
            raise SnapshotFailed(
                f"agent {agent}'s stopped snapshot sent {answer.path}@{answer.offset} "
                f"where {body['path']}@{body['offset']} was due"
            )
        return answer

    def _next_line(self) -> bytes:
        while (end := self._buffer.find(b"\n")) < 0:
            if len(self._buffer) > LINE_MAX:
                raise SnapshotFailed(
                    f"agent {self._agent}'s stopped snapshot wrote a line over {LINE_MAX} bytes"
                )
            try:
                block = next(self._blocks, None)
            except BackendError as failed:
                raise SnapshotFailed(str(failed)) from None
            if block is None:
                raise SnapshotFailed(f"agent {self._agent}'s stopped snapshot ended before its last file")
            self._buffer += block
        line = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        return line


class StoppedSnapshots:
    """Snapshots of agents whose unit does not run, by the runtime that runs them."""

    def __init__(
        self,
        backend: Backend,
        units: Callable[[], dict[str, UnitInfo]],
        storage_of: Callable[[str], StoppedStorage],
        stopped_by_operator: Callable[[], frozenset[str]] = frozenset,
    ) -> None:
        self._backend = backend
        self._units = units
        self._storage_of = storage_of
        self._stopped_by_operator = stopped_by_operator

    async def kept_stopped(self, agent: str) -> bool:
        """The operator stopped it and its unit does not run: nothing will start it during its
        snapshot, and there is no channel to wait for."""
        if agent not in self._stopped_by_operator():
            return False
        unit = (await asyncio.to_thread(self._units)).get(agent)
        return unit is None or unit.state != "running"

    async def fetch(
        self, agent: str, into: Path, limits: PartLimits = DEFAULT_PART_LIMITS
    ) -> SnapshotListing | None:
        """The agent's own files under `into`, checked; None when its unit runs (it is then not
        read behind its back). Raises SnapshotFailed naming the agent and why."""
        unit = (await asyncio.to_thread(self._units)).get(agent)
        if unit is not None and unit.state == "running":
            return None
        try:
            run = await asyncio.to_thread(self._backend.snapshot_stopped, self._storage_of(agent))
        except BackendError as failed:
            raise SnapshotFailed(f"agent {agent} does not run and {failed}") from None
        try:
            listing = await fetch_snapshot(StreamedSnapshot(agent, run.blocks()), agent, into, limits)
        except BaseException:
            # Given up (a refused listing, a bad line, the part's deadline): the run is ended,
            # not waited for.
            await asyncio.shield(asyncio.to_thread(run.abort))
            raise
        else:
            problem = await asyncio.to_thread(run.finish)
        if problem is not None:
            raise SnapshotFailed(f"agent {agent} does not run and {problem}")
        after = (await asyncio.to_thread(self._units)).get(agent)
        if after is not None and after.state == "running":
            # Started (by the supervisor, or the operator) while its files were read: they may
            # have changed under the copy.
            raise SnapshotFailed(
                f"agent {agent} started while its stopped storage was read; back it up again"
            )
        return listing

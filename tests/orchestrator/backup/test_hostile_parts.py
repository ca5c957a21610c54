"""One agent cannot spoil the backup for the others: a hostile agent's snapshot (over its quota,
too many files, names that cannot be written, answers that crawl) makes its own part
incomplete, with the reason in the manifest and in verify's output, and the rest of the backup
completes.

The hostile agent answers the snapshot requests itself, as code in its container can; the other
agent is the real `AgentService`.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_archive import InProcessAgents, make_fleet

from agent_runtime.protocol import AgentOp
from orchestrator.backends.base import SnapshotRun, StoppedStorage
from orchestrator.backends.process import ProcessBackend
from orchestrator.backup.archive import FleetSources, take_backup
from orchestrator.backup.snapshot import Model, PartLimits
from orchestrator.backup.stopped_agents import StoppedSnapshots
from orchestrator.backup.verify import Verdict, verify_archive

MIB = 1024 * 1024


@dataclass
class HostileAgent:
    """Beta's answers, made up: the files it lists and the bytes it sends for each."""

    files: dict[str, bytes]
    sizes: dict[str, int] = field(default_factory=dict)  # lies about a file's size
    delay_s: float = 0.0

    def listing(self) -> dict[str, Any]:
        return {
            "files": [
                {
                    "path": path,
                    "size": self.sizes.get(path, len(data)),
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
                for path, data in self.files.items()
            ]
        }

    def chunk(self, path: str, offset: int) -> dict[str, Any]:
        data = self.files[path][offset : offset + MIB]
        eof = offset + len(data) >= len(self.files[path])
        return {"path": path, "offset": offset, "data": base64.b64encode(data).decode(), "eof": eof}


class FleetWithHostileBeta:
    def __init__(self, honest: InProcessAgents, hostile: HostileAgent) -> None:
        self.honest = honest
        self.hostile = hostile

    async def __call__(self, agent: str, op: AgentOp, body: dict[str, Any], model: type[Model]) -> Model:
        if agent != "beta":
            return await self.honest(agent, op, body, model)
        await asyncio.sleep(self.hostile.delay_s)
        if op is AgentOp.SNAPSHOT_TAKE:
            return model.model_validate(self.hostile.listing())
        if op is AgentOp.SNAPSHOT_READ:
            return model.model_validate(self.hostile.chunk(body["path"], body["offset"]))
        return model.model_validate({"dropped": True})


def backup_with(
    tmp_path: Path, hostile: HostileAgent, limits: PartLimits | None = None
) -> tuple[Path, str, float]:
    """The backup's archive, beta's problem, and the seconds it took."""
    sources, honest = make_fleet(tmp_path)
    if limits is not None:
        sources = FleetSources(
            sources.fleet, sources.fleet_file, sources.paths, sources.agents, {"beta": limits}
        )
    out = tmp_path / "backup.tar"
    started = time.monotonic()
    result = asyncio.run(take_backup(sources, FleetWithHostileBeta(honest, hostile), out))
    seconds = time.monotonic() - started
    parts = {part.name: part for part in result.agents}
    assert parts["alpha"].complete, parts["alpha"].problem
    assert not parts["beta"].complete
    return out, parts["beta"].problem or "", seconds


def assert_only_beta_incomplete(archive: Path, reason: str) -> None:
    report = verify_archive(archive)
    assert report.verdict == Verdict.INCOMPLETE, report.problems
    messages = [problem.message for problem in report.problems]
    assert len(messages) == 1 and messages[0].startswith("agent beta:"), messages
    assert reason in messages[0], messages
    assert report.manifest is not None
    names = {entry.path for entry in report.manifest.entries}
    assert "agents/alpha/own/memory.db" in names
    assert not any(name.startswith("agents/beta/own/") for name in names)


@pytest.mark.parametrize(
    ("files", "reason"),
    [
        ({"notes/a\x00b.md": b"x"}, "control character"),
        ({"notes/\x1b]0;title\x07.md": b"x"}, "control character"),
        ({"notes/" + "n" * 300 + ".md": b"x"}, "longer than"),
        ({"fd": b"file", "fd/x": b"inside"}, "both a file and a folder"),
        ({"history/a.jsonl": b"one", "history/./a.jsonl": b"two"}, "outside its snapshot"),
    ],
    ids=["nul", "escape", "long", "file-and-folder", "dot"],
)
def test_a_name_that_cannot_be_written_spoils_only_its_agents_part(
    tmp_path: Path, files: dict[str, bytes], reason: str
) -> None:
    archive, problem, _ = backup_with(tmp_path, HostileAgent(files))
    assert reason in problem
    assert_only_beta_incomplete(archive, reason)


def test_an_agents_part_is_bounded_by_its_disk_quota(tmp_path: Path) -> None:
    # 20 MiB of real bytes from an agent whose quota is 16 MiB.
    hostile = HostileAgent({"memory.db": b"\0" * (20 * MIB)})
    limits = PartLimits(max_bytes=16 * MIB, max_files=2000, deadline_s=60)
    archive, problem, _ = backup_with(tmp_path, hostile, limits)
    assert "16.0 MiB" in problem or "16777216" in problem
    assert_only_beta_incomplete(archive, "quota")


def test_an_agents_part_is_bounded_by_a_file_count(tmp_path: Path) -> None:
    hostile = HostileAgent({f"history/{i:05d}.jsonl": b"{}\n" for i in range(300)})
    limits = PartLimits(max_bytes=256 * MIB, max_files=100, deadline_s=60)
    archive, problem, _ = backup_with(tmp_path, hostile, limits)
    assert "300 files" in problem
    assert_only_beta_incomplete(archive, "limits.backup_files")


def test_a_slow_agent_holds_only_its_own_part_for_its_deadline(tmp_path: Path) -> None:
    # Each answer just under any per-request timeout, for many chunks: only the whole part's
    # deadline stops it.
    hostile = HostileAgent({f"history/{i}.jsonl": b"{}\n" for i in range(50)}, delay_s=0.2)
    limits = PartLimits(max_bytes=256 * MIB, max_files=2000, deadline_s=1.0)
    archive, problem, seconds = backup_with(tmp_path, hostile, limits)
    assert "limits.backup_part_time" in problem
    assert seconds < 8, seconds
    assert_only_beta_incomplete(archive, "took longer than")


class CrawlingRun(SnapshotRun):
    """The snapshot run of a stopped agent whose planted output crawls: a listing, then a byte
    now and then, never a whole line."""

    def __init__(self) -> None:
        self.aborted = threading.Event()
        self.finished = False

    def blocks(self) -> Iterator[bytes]:
        yield b'{"files": [{"path": "a", "size": 1, "sha256": "00"}]}\n'
        while not self.aborted.wait(0.05):
            yield b" "

    def finish(self) -> str | None:
        self.finished = True
        return None

    def abort(self) -> None:
        self.aborted.set()
        self.finish()


class CrawlingBackend(ProcessBackend):
    def __init__(self, root: Path, run: CrawlingRun) -> None:
        super().__init__(root)
        self.run = run

    def snapshot_stopped(self, storage: StoppedStorage) -> SnapshotRun:
        return self.run


def test_a_stopped_agents_crawling_snapshot_is_ended_at_its_deadline(tmp_path: Path) -> None:
    sources, honest = make_fleet(tmp_path)
    honest.silent.add("beta")
    limits = PartLimits(max_bytes=256 * MIB, max_files=2000, deadline_s=1.0)
    sources = FleetSources(sources.fleet, sources.fleet_file, sources.paths, sources.agents, {"beta": limits})
    run = CrawlingRun()
    stopped = StoppedSnapshots(
        CrawlingBackend(tmp_path / "state", run),
        dict,
        lambda agent: StoppedStorage("demo", agent, "unused", tmp_path / agent),
    )
    started = time.monotonic()
    result = asyncio.run(take_backup(sources, honest, tmp_path / "backup.tar", stopped=stopped))
    assert time.monotonic() - started < 8
    [beta] = [part for part in result.agents if part.name == "beta"]
    assert not beta.complete and "limits.backup_part_time" in (beta.problem or "")
    assert run.aborted.is_set() and run.finished
    assert_only_beta_incomplete(tmp_path / "backup.tar", "took longer than")

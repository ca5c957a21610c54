"""An agent that does not run is backed up without it: the agent's snapshot code runs over its
storage (here on the process runtime, as a subprocess; test_backup_stopped_agent.py runs it in a
throwaway container), its output is checked like an answer over the link, and the manifest
says the agent was stopped. Its storage is left as it was."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_archive import AGENTS, make_fleet, manifest_of

from orchestrator.backends.base import SnapshotRun, StoppedStorage, UnitInfo
from orchestrator.backends.process import ProcessBackend
from orchestrator.backup.archive import take_backup
from orchestrator.backup.snapshot import SnapshotFailed
from orchestrator.backup.stopped_agents import StoppedSnapshots
from orchestrator.backup.verify import Verdict, verify_archive


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def crash_with_a_wal(data_dir: Path, facts: int) -> None:
    """memory.db as an agent killed mid-work leaves it: the newest facts only in the WAL."""
    live = data_dir.parent / "live"
    live.mkdir()
    db = sqlite3.connect(live / "memory.db")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO meta VALUES ('schema_version', '3')")
    db.execute("CREATE TABLE facts (text TEXT)")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for number in range(facts):
        db.execute("INSERT INTO facts VALUES (?)", (f"fact {number}",))
        db.commit()
    for name in ("memory.db", "memory.db-wal"):
        shutil.copyfile(live / name, data_dir / name)
    db.close()


def unit(agent: str, state: str) -> UnitInfo:
    return UnitInfo(id=agent, name=agent, agent=agent, fleet="demo", config_hash="", state=state)  # type: ignore[arg-type]


def stopped_snapshots(tmp_path: Path, units: dict[str, UnitInfo]) -> StoppedSnapshots:
    backend = ProcessBackend(tmp_path / "state")
    return StoppedSnapshots(
        backend,
        lambda: units,
        lambda agent: StoppedStorage("demo", agent, "unused", tmp_path / "volumes" / agent),
    )


def test_a_stopped_agent_is_backed_up_from_its_storage_and_verifies(tmp_path: Path) -> None:
    sources, agents = make_fleet(tmp_path)
    beta = tmp_path / "volumes" / "beta"
    (beta / "memory.db").unlink()
    crash_with_a_wal(beta, facts=50)
    (beta / "workspace" / "learnings").mkdir(parents=True)
    (beta / "workspace" / "learnings" / "errors.md").write_text("- a tool failed\n- cut")
    before = tree_digest(beta)
    agents.silent.add("beta")  # it does not answer: its unit has exited
    out = tmp_path / "backup.tar"

    result = asyncio.run(
        take_backup(
            sources, agents, out, stopped=stopped_snapshots(tmp_path, {"beta": unit("beta", "exited")})
        )
    )

    assert [(a.name, a.complete, a.stopped) for a in result.agents] == [
        ("alpha", True, False),
        ("beta", True, True),
    ]
    assert verify_archive(out).verdict == Verdict.OK
    assert manifest_of(out).agent("beta").memory_schema == "3"  # type: ignore[union-attr]
    assert tree_digest(beta) == before  # nothing written into the stopped agent's storage
    restored = tmp_path / "restored"
    shutil.unpack_archive(out, restored, format="tar")
    with sqlite3.connect(restored / "agents" / "beta" / "own" / "memory.db") as db:
        assert db.execute("SELECT COUNT(*) FROM facts").fetchone()[0] == 50  # the WAL's facts too
    learned = restored / "agents" / "beta" / "own" / "workspace" / "learnings" / "errors.md"
    assert learned.read_text() == "- a tool failed\n"
    assert not list((tmp_path / "state" / "units").glob(".flotilla-backup-*"))  # scratch removed


def test_an_agent_whose_unit_runs_but_does_not_answer_stays_incomplete(tmp_path: Path) -> None:
    sources, agents = make_fleet(tmp_path)
    agents.silent.add("beta")
    out = tmp_path / "backup.tar"
    stopped = stopped_snapshots(tmp_path, {name: unit(name, "running") for name in AGENTS})
    result = asyncio.run(take_backup(sources, agents, out, stopped=stopped))
    [beta] = [a for a in result.agents if a.name == "beta"]
    assert not beta.complete and not beta.stopped and "not connected" in (beta.problem or "")
    assert verify_archive(out).verdict == Verdict.INCOMPLETE


class ScriptedRun(SnapshotRun):
    """A snapshot run whose output is given: what a compromised image might write."""

    def __init__(self, output: bytes) -> None:
        self.output = output
        self.finished = False

    def blocks(self) -> Iterator[bytes]:
        yield from (self.output[i : i + 7] for i in range(0, len(self.output), 7))

    def finish(self) -> str | None:
        self.finished = True
        return None


class ScriptedBackend(ProcessBackend):
    def __init__(self, root: Path, run: ScriptedRun) -> None:
        super().__init__(root)
        self.run_given = run

    def snapshot_stopped(self, storage: StoppedStorage) -> SnapshotRun:
        return self.run_given


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        (b'{"files": [{"path": "../../etc/x", "size": 1, "sha256": "00"}]}\n', "outside its snapshot"),
        (b'{"files": [{"path": "a", "size": 3, "sha256": "00"}]}\n{"path": "a", "offset": 0, '
         b'"data": "YWJj", "eof": true}\n', "not the 3 bytes and sum"),
        (b'{"files": [{"path": "a", "size": 3, "sha256": "00"}]}\n{"path": "b", "offset": 0, '
         b'"data": "YWJj", "eof": true}\n', "where a@0 was due"),
        (b'{"files": [{"path": "a", "size": 3, "sha256": "00"}]}\n', "ended before its last file"),
        (b"not json\n", "bad snapshot.take line"),
    ],
)  # fmt: skip
def test_what_the_run_writes_is_checked(tmp_path: Path, output: bytes, problem: str) -> None:
    run = ScriptedRun(output)
    stopped = StoppedSnapshots(
        ScriptedBackend(tmp_path / "state", run),
        dict,
        lambda agent: StoppedStorage("demo", agent, "unused", tmp_path / agent),
    )
    with pytest.raises(SnapshotFailed, match=problem):
        asyncio.run(stopped.fetch("beta", tmp_path / "into"))
    assert run.finished
    assert not (tmp_path / "etc").exists()


def test_an_agent_that_starts_during_its_snapshot_is_incomplete(tmp_path: Path) -> None:
    sources, agents = make_fleet(tmp_path)
    agents.silent.add("beta")
    states = iter(["exited", "running"])  # before the snapshot run, after it

    def units() -> dict[str, UnitInfo]:
        return {"beta": unit("beta", next(states))}

    stopped = StoppedSnapshots(
        ProcessBackend(tmp_path / "state"),
        units,
        lambda agent: StoppedStorage("demo", agent, "unused", tmp_path / "volumes" / agent),
    )
    result = asyncio.run(take_backup(sources, agents, tmp_path / "backup.tar", stopped=stopped))
    [beta] = [a for a in result.agents if a.name == "beta"]
    assert not beta.complete and "started while its stopped storage was read" in (beta.problem or "")


def test_an_agent_stopped_by_the_operator_is_not_asked_over_its_channel(tmp_path: Path) -> None:
    sources, agents = make_fleet(tmp_path)
    stopped = StoppedSnapshots(
        ProcessBackend(tmp_path / "state"),
        lambda: {"beta": unit("beta", "exited")},
        lambda agent: StoppedStorage("demo", agent, "unused", tmp_path / "volumes" / agent),
        lambda: frozenset({"beta"}),
    )
    result = asyncio.run(take_backup(sources, agents, tmp_path / "backup.tar", stopped=stopped))
    assert [(a.name, a.complete, a.stopped) for a in result.agents] == [
        ("alpha", True, False),
        ("beta", True, True),
    ]

"""An agent's snapshot fetched from one agent's storage and handed to another's over the link
protocol (orchestrator.backup.push), both ends the agents' real services, in process."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest, ErrorBody
from agent_runtime.transport.serving import AgentService
from orchestrator.backup.push import PUSH_CHUNK_BYTES, push_snapshot
from orchestrator.backup.snapshot import Model, SnapshotFailed, fetch_snapshot


class Agents:
    def __init__(self, root: Path) -> None:
        self.restarts: list[str] = []
        self.ops: list[AgentOp] = []
        self.services = {
            name: AgentService(
                Settings(orchestrator_url="http://127.0.0.1:9", agent=name, data_dir=root / name),
                lambda: None,
                lambda: "",
                restart=lambda name=name: self.restarts.append(name),
            )
            for name in ("old", "new")
        }

    async def __call__(self, agent: str, op: AgentOp, body: dict[str, Any], model: type[Model]) -> Model:
        self.ops.append(op)
        status, answer = self.services[agent].answer(AgentRequest(request=1, op=op, body=body))
        if status >= 400:
            raise SnapshotFailed(ErrorBody.model_validate(answer).message)
        return model.model_validate(answer)


def own_files(data: Path) -> None:
    data.mkdir(parents=True)
    with sqlite3.connect(data / "memory.db") as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE facts (text TEXT)")
        db.executemany("INSERT INTO facts VALUES (?)", [(f"fact {n} " + "x" * 200,) for n in range(2000)])
    (data / "history").mkdir()
    (data / "history" / "2026-12-01.jsonl").write_text('{"turn": 1}\n')
    (data / "workspace" / "learnings").mkdir(parents=True)
    (data / "workspace" / "learnings" / "errors.md").write_text("- a tool failed\n")


def test_a_snapshot_fetched_from_one_agent_is_restored_into_another(tmp_path: Path) -> None:
    own_files(tmp_path / "old")
    (tmp_path / "new").mkdir()
    agents = Agents(tmp_path)
    carried = tmp_path / "carried"

    asyncio.run(fetch_snapshot(agents, "old", carried))
    applied = asyncio.run(push_snapshot(agents, "new", carried))

    assert applied.files == 3 and applied.restarting
    assert agents.restarts == ["new"]
    assert agents.ops.count(AgentOp.RESTORE_WRITE) > (tmp_path / "new" / "memory.db").stat().st_size // (
        PUSH_CHUNK_BYTES + 1
    )
    with sqlite3.connect(tmp_path / "new" / "memory.db") as db:
        assert db.execute("SELECT COUNT(*) FROM facts").fetchone()[0] == 2000
    assert (tmp_path / "new" / "history" / "2026-12-01.jsonl").read_text() == '{"turn": 1}\n'
    assert (tmp_path / "new" / "workspace" / "learnings" / "errors.md").read_text() == "- a tool failed\n"


def test_a_file_the_agent_refuses_aborts_the_restore_and_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "new" / "history").mkdir(parents=True)
    (tmp_path / "new" / "history" / "kept.jsonl").write_text("kept\n")
    carried = tmp_path / "carried"
    (carried / "workspace").mkdir(parents=True)
    (carried / "workspace" / "SOUL.md").write_text("not the agent's own file\n")
    agents = Agents(tmp_path)

    with pytest.raises(SnapshotFailed, match="not one of the agent's own files"):
        asyncio.run(push_snapshot(agents, "new", carried))

    assert agents.restarts == []
    assert (tmp_path / "new" / "history" / "kept.jsonl").read_text() == "kept\n"

"""The agent's snapshot of its own files for a backup (agent_runtime.workspace.snapshot), over its service."""

from __future__ import annotations

import base64
import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest
from agent_runtime.transport.serving import AgentService
from agent_runtime.workspace.snapshot import CHUNK_BYTES


def service(tmp_path: Path) -> AgentService:
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=tmp_path)
    return AgentService(settings, lambda: None, lambda: "")


def ask(agent: AgentService, op: AgentOp, **body: object) -> tuple[int, Any]:
    return agent.answer(AgentRequest(request=1, op=op, body=dict(body)))


def read_all(agent: AgentService, path: str) -> bytes:
    data, offset = b"", 0
    while True:
        status, chunk = ask(agent, AgentOp.SNAPSHOT_READ, path=path, offset=offset)
        assert status == 200, chunk
        piece = base64.b64decode(chunk["data"])
        assert len(piece) <= CHUNK_BYTES
        data, offset = data + piece, offset + len(piece)
        if chunk["eof"]:
            return data


def test_a_snapshot_holds_a_consistent_memory_db_history_and_learnings(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "memory.db") as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO meta VALUES ('schema_version', '2')")
        db.execute("CREATE TABLE facts (text TEXT)")
        db.executemany("INSERT INTO facts VALUES (?)", [("x" * 1000,)] * 3000)  # > one chunk
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "2026-12-01.jsonl").write_text('{"a": 1}\n{"b": 2}\n{"c": 3, "tor')
    (tmp_path / "workspace" / "learnings").mkdir(parents=True)
    (tmp_path / "workspace" / "learnings" / "errors.md").write_text("- a tool failed\n")
    (tmp_path / "workspace" / "learnings" / "link.md").symlink_to("/etc/passwd")
    (tmp_path / "workspace" / "SOUL.md").write_text("the operator's copy holds this\n")
    agent = service(tmp_path)

    status, listing = ask(agent, AgentOp.SNAPSHOT_TAKE)

    assert status == 200, listing
    assert listing["memory_schema"] == "2"
    by_path = {f["path"]: f for f in listing["files"]}
    assert set(by_path) == {"memory.db", "history/2026-12-01.jsonl", "workspace/learnings/errors.md"}
    history = read_all(agent, "history/2026-12-01.jsonl")
    assert history == b'{"a": 1}\n{"b": 2}\n'  # the append in progress is left out
    memory = read_all(agent, "memory.db")
    assert len(memory) == by_path["memory.db"]["size"] > CHUNK_BYTES
    assert hashlib.sha256(memory).hexdigest() == by_path["memory.db"]["sha256"]
    copy = tmp_path.parent / "copy.db"
    copy.write_bytes(memory)
    with sqlite3.connect(copy) as db:
        assert db.execute("SELECT COUNT(*) FROM facts").fetchone()[0] == 3000
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert ask(agent, AgentOp.SNAPSHOT_DROP) == (200, {"dropped": True})
    assert ask(agent, AgentOp.SNAPSHOT_READ, path="memory.db", offset=0)[0] == 404


def test_a_read_outside_the_snapshot_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("not for the snapshot")
    agent = service(tmp_path)
    assert ask(agent, AgentOp.SNAPSHOT_TAKE)[0] == 200
    for path in ("../../secret.txt", "/etc/passwd", "../snapshot/../../secret.txt"):
        status, body = ask(agent, AgentOp.SNAPSHOT_READ, path=path, offset=0)
        assert status == 404, (path, body)
    assert ask(agent, AgentOp.SNAPSHOT_READ, offset=0)[0] == 404


def test_an_agent_without_memory_gives_an_empty_snapshot(tmp_path: Path) -> None:
    agent = service(tmp_path)
    assert ask(agent, AgentOp.SNAPSHOT_TAKE) == (200, {"files": [], "memory_schema": None})
    assert not (tmp_path / "memory.db").exists()

"""The agent writes a snapshot handed over its channel into its own storage
(agent_runtime.workspace.restore), checked before anything is replaced."""

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


class Restarts:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def service(data: Path, restarts: Restarts) -> AgentService:
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=data)
    return AgentService(settings, lambda: None, lambda: "", restart=restarts)


def ask(agent: AgentService, op: AgentOp, **body: object) -> tuple[int, Any]:
    return agent.answer(AgentRequest(request=1, op=op, body=dict(body)))


def entry(path: str, data: bytes) -> dict[str, object]:
    return {"path": path, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def send(agent: AgentService, files: dict[str, bytes], chunk: int = 1000) -> None:
    status, body = ask(agent, AgentOp.RESTORE_BEGIN, files=[entry(p, d) for p, d in files.items()])
    assert status == 200, body
    for path, data in files.items():
        for offset in range(0, len(data), chunk):
            piece = base64.b64encode(data[offset : offset + chunk]).decode()
            status, body = ask(agent, AgentOp.RESTORE_WRITE, path=path, offset=offset, data=piece)
            assert status == 200, body


def memory_db(path: Path, fact: str) -> bytes:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE facts (text TEXT)")
        db.execute("INSERT INTO facts VALUES (?)", (fact,))
    data = path.read_bytes()
    path.unlink()
    return data


def test_a_restore_replaces_the_agents_own_files_and_restarts_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "history").mkdir(parents=True)
    (data / "history" / "fresh.jsonl").write_text('{"fresh": true}\n')
    (data / "memory.db").write_bytes(memory_db(tmp_path / "fresh.db", "fresh"))
    (data / "memory.db-wal").write_bytes(b"a log of the fresh database")
    restarts = Restarts()
    agent = service(data, restarts)
    files = {
        "memory.db": memory_db(tmp_path / "old.db", "the sky is green"),
        "history/2026-12-01.jsonl": b'{"turn": 1}\n' * 500,
        "workspace/learnings/errors.md": b"- a tool failed\n",
        ".runtime/processed.jsonl": b'{"item": 7}\n',
    }
    send(agent, files)
    assert restarts.count == 0

    status, applied = ask(agent, AgentOp.RESTORE_COMMIT)

    assert status == 200, applied
    assert applied == {"files": 4, "bytes": sum(map(len, files.values())), "restarting": True}
    assert restarts.count == 1
    for path, content in files.items():
        assert (data / path).read_bytes() == content
    assert not (data / "memory.db-wal").exists()
    assert not (data / "history" / "fresh.jsonl").exists()  # the restored history replaces it
    with sqlite3.connect(data / "memory.db") as db:
        assert db.execute("SELECT text FROM facts").fetchall() == [("the sky is green",)]
    assert not (data / ".runtime" / "restore").exists()


def test_paths_outside_the_agents_own_files_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    agent = service(tmp_path, Restarts())
    for path in ("../escape", "/etc/passwd", "workspace/SOUL.md", "history/../../x", "history//a", "tokens"):
        status, body = ask(agent, AgentOp.RESTORE_BEGIN, files=[entry(path, b"x")])
        assert status == 422, (path, body)
        assert body["error"] == "restore_refused"
    assert not (tmp_path / ".runtime").exists()


def test_a_file_with_a_wrong_sum_or_size_replaces_nothing(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "kept.jsonl").write_text("kept\n")
    restarts = Restarts()
    agent = service(tmp_path, restarts)
    good = b"line\n"
    status, _ = ask(
        agent,
        AgentOp.RESTORE_BEGIN,
        files=[entry("history/a.jsonl", good), {"path": "history/b.jsonl", "size": 5, "sha256": "0" * 64}],
    )
    assert status == 200
    for path in ("history/a.jsonl", "history/b.jsonl"):
        ask(agent, AgentOp.RESTORE_WRITE, path=path, offset=0, data=base64.b64encode(good).decode())

    too_much = ask(agent, AgentOp.RESTORE_WRITE, path="history/a.jsonl", offset=5, data="eA==")
    out_of_order = ask(agent, AgentOp.RESTORE_WRITE, path="history/a.jsonl", offset=99, data="eA==")
    status, body = ask(agent, AgentOp.RESTORE_COMMIT)

    assert too_much[0] == 422 and "more than the 5 bytes" in too_much[1]["message"]
    assert out_of_order[0] == 422
    assert status == 422 and "history/b.jsonl" in body["message"]
    assert (tmp_path / "history" / "kept.jsonl").read_text() == "kept\n"
    assert restarts.count == 0


def test_a_link_in_the_way_is_removed_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    data = tmp_path / "data"
    (data / "workspace").mkdir(parents=True)
    (data / "workspace" / "learnings").symlink_to(outside)
    (data / "memory.db").symlink_to(outside / "target.db")
    agent = service(data, Restarts())
    send(agent, {"workspace/learnings/a.md": b"- learnt\n", "memory.db": b"x" * (CHUNK_BYTES // 100)})

    status, body = ask(agent, AgentOp.RESTORE_COMMIT)

    assert status == 200, body
    assert list(outside.iterdir()) == []
    assert not (data / "workspace" / "learnings").is_symlink()
    assert (data / "workspace" / "learnings" / "a.md").read_bytes() == b"- learnt\n"
    assert not (data / "memory.db").is_symlink()


def test_a_link_on_the_way_to_the_staging_folder_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    (data / ".runtime").symlink_to(outside)
    agent = service(data, Restarts())

    status, body = ask(agent, AgentOp.RESTORE_BEGIN, files=[entry("history/a.jsonl", b"a\n")])

    assert status == 422 and "in the way" in body["message"]
    assert list(outside.iterdir()) == []

"""The agent's storage checked at start: leftover temp files go, a damaged memory.db is set aside."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agent_runtime.memory.store import MemoryStore
from agent_runtime.process.settings import Settings
from agent_runtime.process.storage_check import accept_fresh_store, check_own_storage, fresh_store_of
from agent_runtime.protocol import AgentOp, AgentRequest
from agent_runtime.transport.serving import AgentService
from agent_runtime.work.memory_bridge import memory_embedder
from tests.agent_runtime.conftest import make_config


def make_memory(data_dir: Path) -> None:
    store = MemoryStore(data_dir / "memory.db")
    try:
        store.save("The ferry leaves at 7:15 from pier 3")
    finally:
        store.close()


def test_a_sound_store_is_left_alone_and_temp_files_are_removed(tmp_path: Path) -> None:
    make_memory(tmp_path)
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / ".MEMORY.md.abc123.tmp").write_bytes(b"")
    (tmp_path / ".runtime" / "snapshot").mkdir(parents=True)
    (tmp_path / ".runtime" / "snapshot" / "memory.db").write_bytes(b"half a copy")
    (tmp_path / "workspace" / "notes.md").write_text("kept\n")

    check = check_own_storage(tmp_path)

    assert check.memory_problem is None and check.kept_aside is None
    assert sorted(check.removed_temp_files) == [".runtime/snapshot/", "workspace/.MEMORY.md.abc123.tmp"]
    assert not list(tmp_path.rglob("*.tmp")) and not (tmp_path / ".runtime" / "snapshot").exists()
    assert (tmp_path / "workspace" / "notes.md").exists()
    store = MemoryStore(tmp_path / "memory.db")
    try:
        assert [hit.fact.text for hit in store.search("ferry", 3)] == ["The ferry leaves at 7:15 from pier 3"]
    finally:
        store.close()


def test_a_truncated_memory_db_is_kept_aside_and_a_fresh_store_works(tmp_path: Path) -> None:
    make_memory(tmp_path)
    original = (tmp_path / "memory.db").read_bytes()
    (tmp_path / "memory.db").write_bytes(original[: len(original) // 3])

    check = check_own_storage(tmp_path)

    assert check.memory_problem is not None and check.kept_aside is not None
    assert check.kept_aside.startswith("damaged/memory-")
    assert (tmp_path / check.kept_aside).read_bytes() == original[: len(original) // 3]
    assert fresh_store_of(tmp_path / "memory.db") == check.fresh_store  # a new store, noting why
    store = MemoryStore(tmp_path / "memory.db")
    try:
        store.save("The lighthouse is painted green")
        assert [hit.fact.text for hit in store.search("lighthouse", 3)] == ["The lighthouse is painted green"]
    finally:
        store.close()
    assert check_own_storage(tmp_path).memory_problem is None  # the next start finds a sound store


def test_a_file_that_is_not_a_database_is_kept_aside(tmp_path: Path) -> None:
    (tmp_path / "memory.db").write_bytes(b"this is not a database at all" * 200)
    check = check_own_storage(tmp_path)
    assert check.memory_problem is not None and "not a database" in check.memory_problem
    assert (tmp_path / str(check.kept_aside)).exists()


def test_damage_inside_the_pages_is_found(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "memory.db") as db:
        db.execute("CREATE TABLE facts (id INTEGER PRIMARY KEY, text TEXT)")
        db.execute("CREATE INDEX by_text ON facts(text)")
        db.executemany("INSERT INTO facts(text) VALUES (?)", [(f"fact {i}" * 20,) for i in range(2000)])
    raw = bytearray((tmp_path / "memory.db").read_bytes())
    page = 4096
    for offset in range(3 * page, len(raw) - page, 7 * page):
        raw[offset + 100 : offset + 400] = b"\x07" * 300
    (tmp_path / "memory.db").write_bytes(bytes(raw))
    assert check_own_storage(tmp_path).memory_problem is not None


def test_the_fresh_store_says_why_until_the_operator_accepts_it(tmp_path: Path) -> None:
    make_memory(tmp_path)
    (tmp_path / "memory.db").write_bytes(b"garbled" * 500)

    first = check_own_storage(tmp_path)

    assert first.fresh_store is not None and first.fresh_store.kept_aside == first.kept_aside
    assert (
        "keyword-only" in first.fresh_store.describe()
        and str(first.kept_aside) in first.fresh_store.describe()
    )
    store = MemoryStore(tmp_path / "memory.db")  # the store opens the noted file as its own
    try:
        store.save("The lighthouse is painted green")
    finally:
        store.close()
    later = check_own_storage(tmp_path)  # a later start: nothing new is damaged, the note stays
    assert later.memory_problem is None and later.fresh_store == first.fresh_store

    assert accept_fresh_store(tmp_path / "memory.db")
    assert fresh_store_of(tmp_path / "memory.db") is None
    assert check_own_storage(tmp_path).fresh_store is None
    assert not accept_fresh_store(tmp_path / "memory.db")  # nothing left to accept
    store = MemoryStore(tmp_path / "memory.db")
    try:
        assert [hit.fact.text for hit in store.search("lighthouse", 3)] == ["The lighthouse is painted green"]
    finally:
        store.close()


def test_a_restored_memory_db_carries_no_note(tmp_path: Path) -> None:
    make_memory(tmp_path)
    sound = (tmp_path / "memory.db").read_bytes()
    (tmp_path / "memory.db").write_bytes(b"garbled" * 500)
    assert check_own_storage(tmp_path).fresh_store is not None
    (tmp_path / "memory.db").write_bytes(sound)  # what a restore from a backup does
    assert check_own_storage(tmp_path).fresh_store is None


def test_the_fresh_store_is_keyword_only_and_memory_status_says_why(tmp_path: Path) -> None:
    (tmp_path / "memory.db").write_bytes(b"garbled" * 500)
    check_own_storage(tmp_path)
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=tmp_path)
    config = make_config(embedding_model="test")
    embedder, _ = memory_embedder(settings, config, lambda: "token")
    assert embedder is None  # no gateway call: keyword-only
    service = AgentService(settings, lambda: config, lambda: "token")

    status, body = service.answer(AgentRequest(request=1, op=AgentOp.MEMORY_STATUS, body={}))
    assert status == 200 and body["mode"] == "keyword"
    assert "damaged at" in body["damaged"] and "accepts the fresh store" in body["damaged"]

    status, body = service.answer(AgentRequest(request=2, op=AgentOp.MEMORY_ACCEPT_FRESH, body={}))
    assert (status, body) == (200, {"accepted": True})
    status, body = service.answer(AgentRequest(request=3, op=AgentOp.MEMORY_STATUS, body={}))
    assert body["damaged"] is None

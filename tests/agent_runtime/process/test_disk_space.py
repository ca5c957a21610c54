"""The agent at a full disk: how it tells, what it frees, and that its history stays whole."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import time
from pathlib import Path

import pytest

from agent_runtime.process.disk_space import DiskSpace, is_disk_full
from agent_runtime.process.state import RuntimeState
from agent_runtime.work import context as context_module
from agent_runtime.work import worker as worker_module
from agent_runtime.workspace import history as history_module
from agent_runtime.workspace.history import HistoryLog, Turn
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply


def test_a_full_disk_is_told_from_other_failures() -> None:
    assert is_disk_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert is_disk_full(sqlite3.OperationalError("database or disk is full"))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))


def test_little_space_left_is_full_and_room_again_clears_it_without_flapping(tmp_path: Path) -> None:
    free = DiskSpace(tmp_path).free_bytes()
    assert free is not None and free > 0
    assert DiskSpace(tmp_path, low_bytes=free * 10).read().full
    disk = DiskSpace(tmp_path, low_bytes=free * 2 // 3)  # free is between low and twice low
    assert not disk.read().full
    disk.note_failed_write("the daily log", OSError(errno.ENOSPC, "No space left on device"))
    reading = disk.read()
    assert reading.full and reading.free_bytes is not None  # not yet twice the threshold free
    disk.low_bytes = free // 4  # twice the threshold is free: room again
    assert not disk.read().full


def test_freeing_removes_leftovers_and_a_broken_snapshot_but_nothing_the_agent_keeps(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    kept = tmp_path / "history" / "2026-12-01.jsonl"
    kept.write_text('{"role": "user"}\n')
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "memory-1.db").write_bytes(b"x" * 100)
    (tmp_path / "workspace").mkdir()
    leftover = tmp_path / "workspace" / ".MEMORY.md.cut.tmp"
    leftover.write_bytes(b"x" * 50_000)
    snapshot = tmp_path / ".runtime" / "snapshot"
    snapshot.mkdir(parents=True)
    (snapshot / "memory.db").write_bytes(b"x" * 50_000)
    long_ago = time.time() - 3600
    for path in (leftover, snapshot):
        os.utime(path, (long_ago, long_ago))
    in_flight = tmp_path / "workspace" / ".NOTES.md.abc.tmp"  # a write being made right now
    in_flight.write_bytes(b"x")

    DiskSpace(tmp_path).free_what_rules_allow()

    assert not leftover.exists() and not snapshot.exists() and in_flight.exists()
    assert kept.exists() and (tmp_path / "damaged" / "memory-1.db").exists()


def _turn(text: str) -> Turn:
    return Turn(role="user", content=text)


def test_a_turn_that_cannot_be_stored_is_kept_in_context_and_leaves_no_torn_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[str] = []
    log = HistoryLog(tmp_path, on_full=lambda what, failed: told.append(what))
    log.append(_turn("first"))
    real_write = history_module.os.write

    def half_then_full(fd: int, data: bytes) -> int:
        real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(history_module.os, "write", half_then_full)
    written = log.append(_turn("second, at a full disk"))
    monkeypatch.setattr(history_module.os, "write", real_write)
    log.append(_turn("third"))

    assert written.content == "second, at a full disk"
    assert told == ["a turn of the history log"]
    (day,) = (tmp_path / "history").glob("*.jsonl")
    lines = [json.loads(line)["content"] for line in day.read_text().splitlines()]
    assert lines == ["first", "third"]


def test_without_a_listener_a_full_disk_is_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(history_module.os, "write", full)
    with pytest.raises(OSError):
        HistoryLog(tmp_path).append(_turn("lost"))


def test_the_check_in_carries_the_disk_reading_and_a_change_wakes_it() -> None:
    state = RuntimeState()
    assert state.snapshot().disk_free_bytes is None and not state.snapshot().disk_full
    state.changed.clear()
    state.set_disk(1024, True)
    assert state.changed.is_set()
    snapshot = state.snapshot()
    assert snapshot.disk_full and snapshot.disk_free_bytes == 1024


def test_a_worker_at_a_full_disk_answers_and_the_item_is_acknowledged(
    harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness(lambda body: Reply(text="the answer, at a full disk"))

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def full_write(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    # Every record the item would leave fails: turn log, saved context, processed log, daily log.
    monkeypatch.setattr(history_module.os, "write", full_write)
    monkeypatch.setattr(context_module, "atomic_write_bytes", full)
    monkeypatch.setattr(worker_module, "append_daily", full)
    monkeypatch.setattr(h.worker.processed, "record", full)

    result = h.send("hello")

    assert result.ok and result.text == "the answer, at a full disk"
    warned = " ".join(record.getMessage() for record in caplog.records)
    for what in ("a turn of the history log", "the saved context", "the processed log", "the daily log"):
        assert f"{what} was not written: the agent's disk is full" in warned

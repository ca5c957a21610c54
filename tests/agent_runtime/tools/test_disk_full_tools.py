"""Tool calls and records at a full disk: a failed call's lesson that cannot be written, a tool
that needs space, and the turns of the history written in the space reserve."""

from __future__ import annotations

import errno
import json
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.process.disk_space import RESERVE_BYTES, DiskSpace
from agent_runtime.tools.registry import Tool, ToolError, ToolRegistry
from agent_runtime.workspace import history as history_module
from agent_runtime.workspace import learnings as learnings_module
from agent_runtime.workspace.history import HistoryLog, Turn
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply, last_text


def _no_space(*args: object, **kwargs: object) -> Any:
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_failed_tool_call_at_a_full_disk_is_answered_and_its_lesson_skipped(
    harness: HarnessFactory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(text="answered: " + last_text(body))
        return Reply.call("memory_save", bogus=1)

    h = harness(responder)
    monkeypatch.setattr(learnings_module, "atomic_write_bytes", _no_space)

    result = h.send("save something bogus")

    assert result.ok and "invalid arguments for memory_save" in result.text
    warned = " ".join(record.getMessage() for record in caplog.records)
    assert "a failed tool call in learnings was not written: the agent's disk is full" in warned


def test_a_tool_refused_for_want_of_space_tells_the_model_the_disk_is_full() -> None:
    def save(arguments: dict[str, Any]) -> str:
        raise ToolError("memory database error: database or disk is full") from OSError(
            errno.ENOSPC, "No space left on device"
        )

    registry = ToolRegistry()
    registry.add(Tool("write_file", "writes", {"type": "object"}, _no_space))
    registry.add(Tool("memory_save", "saves", {"type": "object"}, save))
    registry.add(Tool("read_file", "reads", {"type": "object"}, lambda arguments: "text"))

    for name in ("write_file", "memory_save"):
        outcome = registry.dispatch(name, {})
        assert not outcome.ok and outcome.output.startswith(
            f"ERROR: {name} was refused: the agent's disk is full"
        )
        assert "do not call it again" in outcome.output
    assert registry.dispatch("read_file", {}).output == "text"


def test_a_turn_refused_by_a_full_disk_is_written_in_the_reserve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = DiskSpace(tmp_path, low_bytes=1)
    disk.keep_reserve()
    assert disk.reserve_bytes() == RESERVE_BYTES
    told: list[str] = []
    log = HistoryLog(tmp_path, lambda what, failed: told.append(what), make_room=disk.release_reserve)
    real_write = history_module.os.write
    refusals = iter([True])

    def full_once(fd: int, data: bytes) -> int:
        if next(refusals, False):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(history_module.os, "write", full_once)
    log.append(Turn(role="user", content="answered on a full disk"))

    assert told == [] and disk.reserve_bytes() < RESERVE_BYTES
    (day,) = (tmp_path / "history").glob("*.jsonl")
    assert [json.loads(line)["content"] for line in day.read_text().splitlines()] == [
        "answered on a full disk"
    ]


def test_a_used_up_reserve_leaves_the_turn_unwritten_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = DiskSpace(tmp_path, low_bytes=1)
    told: list[str] = []
    log = HistoryLog(tmp_path, lambda what, failed: told.append(what), make_room=disk.release_reserve)
    monkeypatch.setattr(history_module.os, "write", _no_space)

    log.append(Turn(role="user", content="no reserve left"))

    assert told == ["a turn of the history log"]
    assert not disk.release_reserve()


def test_the_reserve_is_not_filled_when_the_disk_has_no_room_for_it(tmp_path: Path) -> None:
    free = DiskSpace(tmp_path).free_bytes()
    assert free is not None
    disk = DiskSpace(tmp_path, low_bytes=free)
    disk.keep_reserve()
    assert disk.reserve_bytes() == 0

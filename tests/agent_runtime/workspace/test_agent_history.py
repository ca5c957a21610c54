"""The turn log: one JSON object per line, append-only, readable back by id."""

from __future__ import annotations

import json
from pathlib import Path

from agent_runtime.workspace.history import HistoryLog, Turn


def test_records_have_the_documented_fields(tmp_path: Path) -> None:
    log = HistoryLog(tmp_path)
    call = {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    turns = [
        Turn("user", "hi", item_id="item-1"),
        Turn("assistant", "", tool_calls=(call,), item_id="item-1"),
        Turn("tool", "contents", tool_call_id="c1", name="read_file", item_id="item-1"),
    ]
    log.append_all(turns)
    files = list((tmp_path / "history").glob("*.jsonl"))
    assert len(files) == 1 and files[0].name == f"{turns[0].at[:10]}.jsonl"
    records = [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines()]
    assert [r["role"] for r in records] == ["user", "assistant", "tool"]
    assert all({"id", "at", "role", "content", "item_id"} <= r.keys() for r in records)
    assert records[1]["tool_calls"] == [call] and records[2]["tool_call_id"] == "c1"
    assert Turn.from_record(records[2]) == turns[2]


def test_load_by_id_reads_back_exactly_those_turns(tmp_path: Path) -> None:
    log = HistoryLog(tmp_path)
    turns = [Turn("user", f"message {n}") for n in range(5)]
    log.append_all(turns)
    (tmp_path / "history" / "1999-01-01.jsonl").write_text('{"torn": \n', encoding="utf-8")
    wanted = [turns[1].id, turns[3].id, "not-an-id"]
    assert [t.content for t in log.load(wanted)] == ["message 1", "message 3"]
    assert len(list(log.iter_turns())) == 5

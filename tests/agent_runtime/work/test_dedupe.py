"""The processed log: a redelivered item is recognised, across restarts and torn writes."""

from __future__ import annotations

from pathlib import Path

from agent_runtime.protocol import WorkResult
from agent_runtime.work.dedupe import PROCESSED_FILE, ProcessedLog


def test_records_survive_a_restart(tmp_path: Path) -> None:
    log = ProcessedLog(tmp_path)
    assert log.seen("item-1") is None
    log.record("item-1", WorkResult(text="answer", output={"n": 1}))

    reopened = ProcessedLog(tmp_path)
    assert reopened.seen("item-1") == WorkResult(text="answer", output={"n": 1})
    assert reopened.seen("item-2") is None
    assert (tmp_path / PROCESSED_FILE).is_file()


def test_the_latest_result_for_an_item_wins(tmp_path: Path) -> None:
    log = ProcessedLog(tmp_path)
    log.record("item-1", WorkResult(ok=False, error="first try"))
    log.record("item-1", WorkResult(text="second try"))

    assert ProcessedLog(tmp_path).seen("item-1") == WorkResult(text="second try")


def test_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    log = ProcessedLog(tmp_path)
    log.record("item-1", WorkResult(text="kept"))
    with (tmp_path / PROCESSED_FILE).open("a", encoding="utf-8") as handle:
        handle.write('{"item_id": "item-2", "result": {"ok": tr')

    reopened = ProcessedLog(tmp_path)
    assert reopened.seen("item-1") == WorkResult(text="kept")
    assert reopened.seen("item-2") is None
    reopened.record("item-3", WorkResult(text="after the tear"))
    assert ProcessedLog(tmp_path).seen("item-3") == WorkResult(text="after the tear")


def test_compaction_keeps_the_newest_entries(tmp_path: Path) -> None:
    log = ProcessedLog(tmp_path, max_entries=10)
    for n in range(25):
        log.record(f"item-{n}", WorkResult(text=str(n)))

    assert len(log) <= 10
    reopened = ProcessedLog(tmp_path, max_entries=10)
    assert reopened.seen("item-24") == WorkResult(text="24")
    assert reopened.seen("item-0") is None
    lines = (tmp_path / PROCESSED_FILE).read_text().splitlines()
    assert len(lines) <= 10

"""The turn log stays bounded by a rule: old days are compacted (long tool outputs cut), then
turned into episodes that memory search still finds; no day a job has not read is touched."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_runtime.memory.maintenance import MaintenanceRunner
from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.store import MemoryStore
from agent_runtime.memory.tools import MemoryTools

START = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def write_days(data: Path, days: int) -> None:
    history = data / "history"
    history.mkdir(parents=True, exist_ok=True)
    for n in range(days):
        day = START + timedelta(days=n)
        stamp = day.isoformat().replace("+00:00", "Z")
        records = [
            {
                "id": f"u{n}",
                "at": stamp,
                "role": "user",
                "content": f"[{stamp} · message from operator]\nCheck the harbour crane number {n}",
            },
            {
                "id": f"c{n}",
                "at": stamp,
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "x", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
                ],
            },
            {"id": f"t{n}", "at": stamp, "role": "tool", "content": "log line\n" * 500},
            {"id": f"a{n}", "at": stamp, "role": "assistant", "content": f"Crane {n} is fine."},
        ]
        (history / f"{day:%Y-%m-%d}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_old_days_are_compacted_then_kept_as_searchable_episodes(tmp_path: Path) -> None:
    write_days(tmp_path, 45)
    now = START + timedelta(days=45)
    with MemoryStore(tmp_path / "memory.db", config=MemoryConfig(dimensions=8), clock=lambda: now) as store:
        runner = MaintenanceRunner(store, tmp_path, clock=lambda: now)
        # A job that has not read the log holds everything back.
        assert runner.run_now("rotation").detail == "nothing to rotate"
        for job in ("extraction", "consolidation", "review"):
            runner.run_now(job)
        before = sum(p.stat().st_size for p in (tmp_path / "history").glob("*.jsonl"))
        record = runner.run_now("rotation", "schedule")
        assert record.trigger == "schedule"
        files = sorted(p.stem for p in (tmp_path / "history").glob("*.jsonl"))
        assert files[0] == f"{START + timedelta(days=15):%Y-%m-%d}"  # 30 days kept
        after = sum(p.stat().st_size for p in (tmp_path / "history").glob("*.jsonl"))
        assert after < before / 2
        # Compacted: an old kept day has its tool output cut, a recent one is whole.
        old = (tmp_path / "history" / f"{START + timedelta(days=20):%Y-%m-%d}.jsonl").read_text()
        recent = (tmp_path / "history" / f"{START + timedelta(days=44):%Y-%m-%d}.jsonl").read_text()
        assert "chars cut by rotation" in old and "chars cut by rotation" not in recent
        # What left the log is still found, as an episode.
        hits = MemoryTools(store).memory_search("harbour crane number 3")["results"]
        assert any(hit["from"] == "episode" and "crane number 3" in hit["text"] for hit in hits)
        assert len(store.recent_episodes(100)) == 15
        # Nothing more to do the same day.
        assert runner.run_now("rotation").detail == "nothing to rotate"

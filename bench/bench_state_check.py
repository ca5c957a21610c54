"""What the start-up check of state.db costs: `PRAGMA quick_check` over a state.db of the size
the simulated month ends with (about 23 MiB), and of four times that.

The database holds one indexed table of rows of a run record's size, filled to the size
measured (quick_check reads every page once, whatever the tables); the check is the one
`flotilla up` and `flotilla doctor` run.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from orchestrator.state.check import state_problem

Row = dict[str, str]
ROW_TEXT = "an operator's message or a run's detail, of a typical length for this fleet. " * 6


def _make_state(db: Path, target_bytes: int) -> int:
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE runs_like (id INTEGER PRIMARY KEY, agent TEXT, detail TEXT)")
    conn.execute("CREATE INDEX runs_like_agent ON runs_like (agent, id)")
    batch = [(f"agent-{n % 50}", ROW_TEXT) for n in range(5000)]
    while db.stat().st_size < target_bytes:
        conn.executemany("INSERT INTO runs_like (agent, detail) VALUES (?, ?)", batch)
        conn.commit()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return db.stat().st_size


def _timed_check(db: Path, repeats: int) -> list[float]:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        assert state_problem(db) is None
        timings.append(time.perf_counter() - started)
    return timings


def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    repeats = 3 if quick else 7
    for label, target in (("23 MiB", 23 * 1024 * 1024), ("92 MiB", 92 * 1024 * 1024)):
        with tempfile.TemporaryDirectory() as folder:
            db = Path(folder) / "state.db"
            size = _make_state(db, target)
            timings = _timed_check(db, repeats)
        rows.append(
            {
                "benchmark": "state_check",
                "metric": f"quick_check of a {label} state.db ({size / 1024 / 1024:.1f} MiB), median of {repeats}",
                "value": f"{statistics.median(timings) * 1000:.0f} ms",
                "target": "< 1 s at 23 MiB",
            }
        )
    return rows


if __name__ == "__main__":
    for row in run(quick=True):
        print(row)

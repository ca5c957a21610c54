"""CI's week of the simulated month (`python -m bench.soak --days 7`): memory jobs on their
slot, forgotten texts in no file, no model call from an idle tick, storage under its bounds."""

from __future__ import annotations

from pathlib import Path

from bench.soak import goals_missed, simulate


def test_a_simulated_week_meets_every_goal(tmp_path: Path) -> None:
    report = simulate(7, tmp_path)
    assert report.due > 0 and report.forgotten > 0
    assert goals_missed(report, 7) == []

"""The `checkpoint` strategy's jobs on a real turn log: artifacts, checkpoints, run records,
triggers and schedules, review flags consumed by the next jobs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent_runtime.cognition.files import CognitionFiles, Review, ReviewFlag, RunOutcome
from agent_runtime.cognition.runner import CognitionRunner
from agent_runtime.protocol import ContextSettings
from agent_runtime.workspace.history import HistoryLog, Turn

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


def _log(data: Path, pairs: list[tuple[str, str]], at: datetime = NOON) -> list[str]:
    log = HistoryLog(data)
    ids = []
    for index, (role, text) in enumerate(pairs):
        stamp = (at + timedelta(seconds=index)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        ids.append(log.append(Turn(role=role, content=text, at=stamp)).id)
    return ids


def _runner(data: Path, now: datetime = NOON, **settings: object) -> CognitionRunner:
    return CognitionRunner(
        data,
        ContextSettings.model_validate({"strategy": "checkpoint", **settings}),
        agent_model="test",
        clock=lambda: now,
    )


def test_consolidation_writes_working_memory_checkpoint_and_a_run_record(tmp_path: Path) -> None:
    ids = _log(
        tmp_path,
        [
            (
                "user",
                "[2026-03-02 12:00:00 UTC · message from operator]\nDraft the Q3 report, deadline friday",
            ),
            ("assistant", "Started the Q3 report outline."),
            ("user", "Also look into the flaky CI job"),
        ],
    )
    record = _runner(tmp_path).run("consolidation")
    files = CognitionFiles(tmp_path)
    text = files.working_memory.read_text()
    assert "## Priorities\n- Draft the Q3 report, deadline friday (2026-03-02)" in text
    assert "- Also look into the flaky CI job (2026-03-02)" in text
    assert "- Started the Q3 report outline. (2026-03-02)" in text
    assert "message from operator" not in text
    assert record.outcome == RunOutcome.OK
    assert record.trigger == "manual" and record.model is None and record.input_turns == 3
    assert record.files_changed == ["workspace/cognition/WORKING_MEMORY.md"]
    assert files.checkpoint("consolidation")["last_turn_id"] == ids[-1]
    stored = list((tmp_path / "cognition" / "runs" / "2026" / "03" / "02").glob("*-consolidation.json"))
    assert len(stored) == 1
    assert json.loads(stored[0].read_text())["files_changed"] == record.files_changed
    # Each job writes only its artifact.
    assert not (files.semantic_dir / "facts.md").exists() and not files.review_path.exists()
    # Nothing new: the file stays as it was, and the record says so.
    again = _runner(tmp_path).run("consolidation")
    assert again.input_turns == 0 and again.files_changed == []


def test_working_memory_stays_under_its_cap(tmp_path: Path) -> None:
    _log(tmp_path, [("user", f"Thread number {n}: " + "words " * 20) for n in range(40)])
    _runner(tmp_path, working_memory_bytes=600).run("consolidation")
    assert len(CognitionFiles(tmp_path).working_memory.read_bytes()) <= 600


def test_extraction_fills_semantic_files_and_a_correction_replaces_the_old_value(tmp_path: Path) -> None:
    _log(
        tmp_path,
        [
            ("user", "My locker code is 4512. I prefer tea over coffee."),
            ("user", "My project deadline is June 3"),
        ],
    )
    runner = _runner(tmp_path)
    runner.run("extraction")
    files = CognitionFiles(tmp_path)
    facts = (files.semantic_dir / "facts.md").read_text()
    assert "The user's locker code is 4512" in facts
    assert "The user prefers tea over coffee" in (files.semantic_dir / "preferences.md").read_text()
    assert "project deadline is June 3" in (files.semantic_dir / "projects.md").read_text()
    _log(tmp_path, [("user", "Correction: my locker code is 7788")], at=NOON + timedelta(hours=1))
    runner.run("extraction")
    facts = (files.semantic_dir / "facts.md").read_text()
    assert "7788" in facts and "4512" not in facts
    assert not files.working_memory.exists()


def test_review_flags_are_consumed_by_consolidation(tmp_path: Path) -> None:
    """A stale line is flagged by the review, then removed by the next consolidation."""
    _log(tmp_path, [("user", "Book the venue for the offsite")], at=NOON - timedelta(days=10))
    _runner(tmp_path, now=NOON - timedelta(days=10)).run("consolidation")
    files = CognitionFiles(tmp_path)
    assert "Book the venue" in files.working_memory.read_text()
    runner = _runner(tmp_path)
    review = runner.run("review")
    assert review.files_changed == ["cognition/review.json"]
    flags = files.review().flags
    assert [flag.reason for flag in flags] == ["stale"] and "Book the venue" in flags[0].line
    _log(tmp_path, [("user", "Prepare the budget slides")])
    runner.run("consolidation")
    text = files.working_memory.read_text()
    assert "Book the venue" not in text and "Prepare the budget slides" in text


def test_extraction_drops_a_line_the_review_flagged(tmp_path: Path) -> None:
    files = CognitionFiles(tmp_path)
    files.write(files.semantic_dir / "facts.md", "# Facts\n- The office is on floor 3 (2026-01-01)\n")
    flag = ReviewFlag(
        file="workspace/cognition/facts.md", line="- The office is on floor 3 (2026-01-01)", reason="stale"
    )
    files.write(files.review_path, Review(at=NOON, flags=[flag]).model_dump_json())
    _log(tmp_path, [("user", "My badge number is 991")])
    _runner(tmp_path).run("extraction")
    facts = (files.semantic_dir / "facts.md").read_text()
    assert "floor 3" not in facts and "badge number is 991" in facts


def test_triggers_follow_the_default_turn_counts(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    _log(tmp_path, [("user", f"message {n}") for n in range(6)])
    assert runner.due() == [("consolidation", "turns")]
    _log(tmp_path, [("user", f"more {n}") for n in range(2)], at=NOON + timedelta(minutes=1))
    assert runner.due() == [("review", "turns"), ("consolidation", "turns")]
    _log(tmp_path, [("user", f"again {n}") for n in range(4)], at=NOON + timedelta(minutes=2))
    assert [job for job, _ in runner.due()] == ["review", "consolidation", "extraction"]
    runner.run("review")
    assert [job for job, _ in runner.due()] == ["consolidation", "extraction"]


def test_schedules_run_a_job_once_per_time_of_day(tmp_path: Path) -> None:
    clock = [datetime(2026, 3, 2, 2, 30, tzinfo=UTC)]
    runner = CognitionRunner(tmp_path, ContextSettings(), agent_model="test", clock=lambda: clock[0])
    assert runner.due() == []
    clock[0] = datetime(2026, 3, 2, 3, 1, tzinfo=UTC)
    assert runner.due() == [("review", "schedule")]
    runner.run("review", "schedule")
    assert runner.due() == []
    clock[0] = datetime(2026, 3, 2, 4, 0, tzinfo=UTC)
    assert runner.due() == [("consolidation", "schedule")]
    clock[0] = datetime(2026, 3, 2, 15, 0, tzinfo=UTC)
    assert ("review", "schedule") in runner.due()
    custom = CognitionRunner(
        tmp_path,
        ContextSettings.model_validate({"jobs": {"review": {"after_turns": 50, "at": ["16:00"]}}}),
        agent_model="test",
        clock=lambda: clock[0],
    )
    assert ("review", "schedule") not in custom.due()


def test_a_job_model_is_called_and_named_in_the_record(tmp_path: Path) -> None:
    _log(tmp_path, [("user", "Plan the migration")])
    asked: list[tuple[str, str]] = []

    def model_call(model: str):  # type: ignore[no-untyped-def]
        def complete(prompt: str) -> str:
            asked.append((model, prompt))
            return (
                "## Priorities\n- Migration plan\n## Open threads\n- none yet\n## Recent progress\n- started"
            )

        return complete

    runner = CognitionRunner(
        tmp_path,
        ContextSettings.model_validate(
            {"jobs": {"consolidation": {"after_turns": 6, "model": "openai:gpt-4o-mini"}}}
        ),
        agent_model="openai:gpt-4o",
        model_call=model_call,
        clock=lambda: NOON,
    )
    record = runner.run("consolidation")
    assert asked and asked[0][0] == "openai:gpt-4o-mini"
    assert record.model == "openai:gpt-4o-mini" and record.provider == "openai"
    assert "- Migration plan" in CognitionFiles(tmp_path).working_memory.read_text()
    assert runner.model_of("review") == "openai:gpt-4o"


def test_a_review_model_flags_a_line_and_extraction_then_drops_it(tmp_path: Path) -> None:
    files = CognitionFiles(tmp_path)
    files.write(
        files.semantic_dir / "projects.md",
        "# Projects\n- The launch is planned for Q1 (2026-01-05)\n- The API is frozen (2026-02-01)\n",
    )

    def model_call(model: str):  # type: ignore[no-untyped-def]
        return lambda prompt: '[{"line": 1, "reason": "stale"}, {"line": 99, "reason": "stale"}]'

    runner = CognitionRunner(
        tmp_path, ContextSettings(), agent_model="openai:gpt-4o", model_call=model_call, clock=lambda: NOON
    )
    record = runner.run("review")
    assert record.detail == "1 flags (heuristics and model)"
    assert [flag.line for flag in files.review().flags] == ["- The launch is planned for Q1 (2026-01-05)"]
    runner.run("extraction")
    projects = (files.semantic_dir / "projects.md").read_text()
    assert "launch" not in projects and "The API is frozen" in projects


def test_an_unreadable_review_answer_leaves_the_heuristic_flags(tmp_path: Path) -> None:
    files = CognitionFiles(tmp_path)
    files.write(files.semantic_dir / "facts.md", "# Facts\n- [k] A (2026-01-01)\n- [k] B (2026-02-01)\n")
    runner = CognitionRunner(
        tmp_path,
        ContextSettings(),
        agent_model="m",
        model_call=lambda model: lambda p: "no idea",
        clock=lambda: NOON,
    )
    assert runner.run("review").detail == "1 flags (heuristics)"
    assert [(f.line, f.reason) for f in files.review().flags] == [("- [k] A (2026-01-01)", "superseded")]

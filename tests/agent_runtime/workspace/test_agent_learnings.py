"""Learnings: deduplicated, capped, injected without times or counts."""

from __future__ import annotations

from pathlib import Path

from agent_runtime.workspace.learnings import CORRECTIONS_CAP, ERRORS_CAP, Learnings, argument_digest


def test_errors_are_deduplicated_by_tool_arguments_and_error(tmp_path: Path) -> None:
    learnings = Learnings(tmp_path)
    assert learnings.record_error("read_file", {"path": "a"}, "no such file")
    assert not learnings.record_error("read_file", {"path": "a"}, "no  such\nfile")
    assert learnings.record_error("read_file", {"path": "b"}, "no such file")
    assert learnings.record_error("write_file", {"path": "a"}, "no such file")
    text = learnings.errors_path.read_text(encoding="utf-8")
    assert text.count("`read_file`") == 2 and "seen 2 times" in text
    assert argument_digest({"path": "a"}) in text


def test_corrections_are_deduplicated_case_and_space_insensitively(tmp_path: Path) -> None:
    learnings = Learnings(tmp_path)
    assert learnings.record_correction("Use metric units.")
    assert not learnings.record_correction("use   METRIC units.")
    assert learnings.corrections_path.read_text(encoding="utf-8").count("metric") == 1


def test_files_stay_under_their_caps_dropping_the_oldest(tmp_path: Path) -> None:
    learnings = Learnings(tmp_path)
    for number in range(80):
        learnings.record_error("tool", {"n": number}, f"failure number {number}")
        learnings.record_correction(f"correction number {number}: do it the other way")
    assert len(learnings.errors_path.read_bytes()) <= ERRORS_CAP
    assert len(learnings.corrections_path.read_bytes()) <= CORRECTIONS_CAP
    errors = learnings.errors_path.read_text(encoding="utf-8")
    assert "failure number 79" in errors and "failure number 0 " not in errors


def test_rendering_is_stable_across_repeats(tmp_path: Path) -> None:
    learnings = Learnings(tmp_path)
    learnings.record_error("read_file", {"path": "a"}, "no such file")
    learnings.record_correction("Answer in French")
    first = learnings.render()
    learnings.record_error("read_file", {"path": "a"}, "no such file")
    assert learnings.render() == first
    assert "Answer in French" in first and "`read_file`" in first
    assert "20" not in first.split("Tool calls")[1]  # no timestamp in the prompt view

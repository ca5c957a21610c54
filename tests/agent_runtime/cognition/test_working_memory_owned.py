"""Working memory belongs to its job: the model cannot write `cognition/`, it proposes a change
that goes through redaction, the forget barriers and provenance, and the job applies it. And the
deterministic consolidation keeps what helps: no runtime lines, no heartbeat checklists, and a
priority the user changed leaves at once."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.cognition.files import CognitionFiles
from agent_runtime.cognition.jobs import parse_sections
from agent_runtime.cognition.proposals import ProposalDesk, ProposalInputError
from agent_runtime.memory.provenance import PersonWords
from agent_runtime.workspace.files import ProtectedFile, WorkspaceFiles
from tests.agent_runtime.cognition.test_cognition_jobs import _log, _runner
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply

NOON = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
HEADER = "[2026-03-02 12:00:00 UTC · message from operator]"
RUNTIME = "[runtime: peers writer idle · 39,500 tokens left of your daily budget · 2 other items waiting]"


@pytest.mark.parametrize(
    "path",
    ["cognition/WORKING_MEMORY.md", "cognition/facts.md", "./cognition/preferences.md", "cognition/new.md"],
)
def test_write_file_refuses_the_cognition_folder(tmp_path: Path, path: str) -> None:
    files = WorkspaceFiles(tmp_path, 1_000_000)
    with pytest.raises(ProtectedFile, match="propose_memory_change"):
        files.write(path, "- I decide my own priorities now\n")
    assert not (tmp_path / "cognition").exists()


def desk(tmp_path: Path, people: PersonWords | None = None, barred: str = "") -> ProposalDesk:
    return ProposalDesk(
        CognitionFiles(tmp_path),
        people or PersonWords(),
        forgotten=lambda text: bool(barred) and barred in text,
        clock=lambda: NOON,
    )


def test_a_proposal_is_stamped_checked_and_applied_by_the_job(tmp_path: Path) -> None:
    people = PersonWords()
    people.heard("The venue for the offsite is Lisbon")
    taking = desk(tmp_path, people, barred="4512")
    said = json.loads(
        taking.propose(
            {
                "file": "WORKING_MEMORY.md",
                "text": "The venue for the offsite is Lisbon",
                "section": "Priorities",
            }
        )
    )
    assert said["status"] == "proposed" and said["provenance"] == "user_stated"
    mine = json.loads(
        taking.propose({"file": "facts.md", "text": "The CI runner is slow", "subject": "ci.speed"})
    )
    assert mine["provenance"] == "agent"
    barred = json.loads(taking.propose({"file": "facts.md", "text": "The locker code is 4512"}))
    assert barred["status"] == "refused"
    key = json.loads(taking.propose({"file": "facts.md", "text": "The deploy password: hunter2hunter2"}))
    assert "redacted" in key["message"]
    with pytest.raises(ProposalInputError, match="file"):
        taking.propose({"file": "SOUL.md", "text": "x"})
    _log(tmp_path, [("user", "Hello")])
    runner = _runner(tmp_path)
    record = runner.run("consolidation")
    assert "1 proposal(s) applied" in record.detail
    files = CognitionFiles(tmp_path)
    priorities = parse_sections(files.working_memory.read_text())["Priorities"]
    assert priorities == ["- The venue for the offsite is Lisbon (2026-03-02, user_stated)"]
    runner.run("extraction")
    facts = (files.semantic_dir / "facts.md").read_text()
    assert "- [ci.speed] The CI runner is slow (2026-03-02)" in facts
    assert "hunter2" not in facts and "4512" not in facts
    assert list((tmp_path / "cognition" / "proposals").glob("*.json")) == []  # consumed


def test_the_model_cannot_remove_a_persons_line_no_person_asked_to_remove(tmp_path: Path) -> None:
    files = CognitionFiles(tmp_path)
    files.write(
        files.working_memory,
        "# Working memory\n## Priorities\n- Ship the report by Friday (2026-03-02, user_stated)\n",
    )
    people = PersonWords()
    refused = json.loads(
        desk(tmp_path, people).propose(
            {"file": "WORKING_MEMORY.md", "action": "remove", "text": "Ship the report by Friday"}
        )
    )
    assert refused["status"] == "refused"
    people.heard("Please remove the ship the report by friday priority")
    allowed = json.loads(
        desk(tmp_path, people).propose(
            {"file": "WORKING_MEMORY.md", "action": "remove", "text": "Ship the report by Friday"}
        )
    )
    assert allowed["status"] == "proposed"


def test_the_tool_is_offered_with_the_checkpoint_strategy(harness: HarnessFactory) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply("ok")
        return Reply.call("write_file", path="cognition/WORKING_MEMORY.md", content="- obey me\n")

    h = harness(model, context={"strategy": "checkpoint"})
    assert "propose_memory_change" in h.worker.registry
    h.send("Rewrite your working memory")
    assert (
        not (h.data_dir / "workspace" / "cognition" / "WORKING_MEMORY.md").exists()
        or "obey me" not in (h.data_dir / "workspace" / "cognition" / "WORKING_MEMORY.md").read_text()
    )


def test_no_runtime_lines_and_no_heartbeat_checklists_in_working_memory(tmp_path: Path) -> None:
    _log(
        tmp_path,
        [
            ("user", f"{HEADER}\nDraft the Q3 report, deadline friday\n{RUNTIME}"),
            (
                "user",
                "[2026-03-02 12:01:00 UTC · heartbeat]\nWhy now: schedule\n- check the inbox\n" + RUNTIME,
            ),
            ("assistant", "Started the outline."),
        ],
    )
    _runner(tmp_path).run("consolidation")
    text = CognitionFiles(tmp_path).working_memory.read_text()
    assert "runtime:" not in text and "budget" not in text
    assert "check the inbox" not in text and "Why now" not in text
    assert "- Draft the Q3 report, deadline friday (2026-03-02)" in text


def test_a_priority_the_user_changed_leaves_at_once(tmp_path: Path) -> None:
    _log(tmp_path, [("user", f"{HEADER}\nPriority: book the offsite venue in Porto by Friday")])
    _runner(tmp_path).run("consolidation")
    later = NOON + timedelta(hours=2)
    _log(
        tmp_path,
        [("user", f"{HEADER}\nChange of plan: book the offsite venue in Lisbon by Friday")],
        at=later,
    )
    _runner(tmp_path, now=later).run("consolidation")
    sections = parse_sections(CognitionFiles(tmp_path).working_memory.read_text())
    assert sections["Priorities"] == [
        "- Change of plan: book the offsite venue in Lisbon by Friday (2026-03-02)"
    ]
    assert "Porto" not in CognitionFiles(tmp_path).working_memory.read_text()
    # A line on another subject stays.
    _log(tmp_path, [("user", f"{HEADER}\nUrgent: renew the TLS certificate")], at=later + timedelta(hours=1))
    _runner(tmp_path, now=later + timedelta(hours=1)).run("consolidation")
    priorities = parse_sections(CognitionFiles(tmp_path).working_memory.read_text())["Priorities"]
    assert len(priorities) == 2

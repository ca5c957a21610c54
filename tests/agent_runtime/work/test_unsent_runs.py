"""Run records are sent until the orchestrator has them: kept while it is away or busy, sent
again in order, dropped only when refused for good."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_runtime.protocol import RunOutcome, RunRecord
from agent_runtime.transport.errors import OrchestratorRefused, OrchestratorUnavailable
from agent_runtime.work.run_records import UnsentRuns
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply


def _run(n: int) -> RunRecord:
    now = datetime.now(UTC)
    return RunRecord(
        id=f"run-{n}",
        agent="writer",
        trigger="operator",
        item_id=f"item-{n}",
        model="test",
        started_at=now,
        finished_at=now,
        outcome=RunOutcome.OK,
    )


class Orchestrator:
    def __init__(self) -> None:
        self.stored: list[str] = []
        self.failure: Exception | None = None

    def record_run(self, run: RunRecord) -> None:
        if self.failure is not None:
            raise self.failure
        self.stored.append(run.id)


def test_records_wait_while_the_orchestrator_is_away_and_go_in_order_once_it_is_back() -> None:
    orchestrator = Orchestrator()
    unsent = UnsentRuns(orchestrator.record_run)
    orchestrator.failure = OrchestratorUnavailable("POST /runs: connection refused")
    for n in range(3):
        unsent.add(_run(n))
        assert unsent.send() == n + 1
    orchestrator.failure = OrchestratorRefused(429, "too_many", "slow down")
    assert unsent.send() == 3 and orchestrator.stored == []

    orchestrator.failure = None
    assert unsent.send() == 0
    assert orchestrator.stored == ["run-0", "run-1", "run-2"]


def test_a_record_refused_for_good_is_dropped_and_the_next_ones_go() -> None:
    orchestrator = Orchestrator()
    unsent = UnsentRuns(orchestrator.record_run)
    orchestrator.failure = OrchestratorRefused(422, "invalid", "bad record")
    unsent.add(_run(0))
    assert unsent.send() == 0
    orchestrator.failure = None
    unsent.add(_run(1))
    assert unsent.send() == 0 and orchestrator.stored == ["run-1"]


def test_past_the_cap_the_oldest_record_goes_first() -> None:
    orchestrator = Orchestrator()
    orchestrator.failure = OrchestratorUnavailable("away")
    unsent = UnsentRuns(orchestrator.record_run, kept=2)
    for n in range(3):
        unsent.add(_run(n))
    orchestrator.failure = None
    unsent.send()
    assert orchestrator.stored == ["run-1", "run-2"]


def test_a_run_record_the_orchestrator_missed_is_sent_with_the_next_item(harness: HarnessFactory) -> None:
    h = harness(lambda body: Reply(text="answered"))
    h.fake.runs_down = 1

    first = h.send("first")
    assert first.ok and h.fake.runs == [] and len(h.worker.unsent_runs) == 1
    h.send("second")

    assert [run.item_id for run in h.fake.runs] == list(h.fake.results)
    assert len(h.worker.unsent_runs) == 0

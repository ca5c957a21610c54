"""A fleet with two typed agents and one for free-form steps, on the fake backend; the tests play
the agents by answering the items the engine queues."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agent_runtime.protocol import WorkResult
from orchestrator.approvals.store import ApprovalStore
from orchestrator.services import Services
from orchestrator.workflows.engine import WorkflowEngine
from orchestrator.workflows.store import WorkflowRun

INTERFACES = Path(__file__).resolve().parents[3] / "examples" / "interfaces"

AGENTS = """\
version: 1
fleet: flows
agents:
  researcher:
    interface: interfaces/researcher.md
  writer:
    interface: interfaces/writer.md
  helper:
    role: does what it is told
"""


class Clock:
    def __init__(self) -> None:
        self.at = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


class Flows:
    """The engine of a fleet, with the means to answer for its agents and to restart it."""

    def __init__(self, services: Services, clock: Clock) -> None:
        self.services = services
        self.clock = clock
        self.engine = self.restart()

    def restart(self) -> WorkflowEngine:
        """A new engine on the same state.db: what an orchestrator started after a kill has."""
        services = self.services
        self.engine = WorkflowEngine(
            services.db,
            services.fleet_view,
            services.inbox,
            ApprovalStore(services.db, services.events),
            services.events,
            now=self.clock,
        )
        return self.engine

    def run(self, run_id: str) -> WorkflowRun:
        found = self.engine.store.get(run_id)
        assert found is not None
        return found

    def states(self, run_id: str) -> dict[str, str]:
        return {step.step: step.state for step in self.run(run_id).steps}

    def answer(
        self,
        run_id: str,
        step: str,
        output: dict[str, Any] | None = None,
        *,
        ok: bool = True,
        text: str = "",
        error: str | None = None,
        agent_run: str | None = None,
    ) -> None:
        item_id = self.run(run_id).step(step).item_id
        assert item_id is not None
        agent = self.services.inbox.owner(item_id)
        assert agent is not None
        result = WorkResult(
            ok=ok, output=output, text=text, error=error if not ok else None, run_id=agent_run
        )
        assert self.services.inbox.complete(agent, item_id, result)
        self.engine.advance(run_id)

    def item(self, run_id: str, step: str) -> Any:
        item_id = self.run(run_id).step(step).item_id
        assert item_id is not None
        return self.services.inbox.get(item_id)


def fleet_with(workflows: str) -> str:
    return AGENTS + textwrap.dedent(workflows)

"""The engine's loop as the orchestrator runs it: a run goes from step to step as the agent answers,
an approval decided elsewhere moves its run on, and runs left running by a killed orchestrator
are resumed by the loop's first pass."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from workflow_helpers import Flows

from agent_runtime.protocol import WorkResult, utcnow
from orchestrator.approvals.store import ApprovalStore
from orchestrator.services import Services
from orchestrator.telemetry.otel_spans import PlannedIds, provider_for, trace_id_of
from orchestrator.workflows.service import WorkflowService
from orchestrator.workflows.spans import RunSpans
from orchestrator.workflows.store import WorkflowRun
from orchestrator.workflows.triggers import WorkflowTriggers

MakeFlows = Callable[[str], Flows]

GATED = """\
workflows:
  gated:
    steps:
      first: {agent: helper, instruction: one}
      review: {depends_on: [first], approval: required}
      last: {agent: helper, instruction: two, depends_on: [review]}
"""


async def answer_everything(services: Services, stop: asyncio.Event) -> None:
    while not stop.is_set():
        item = await services.inbox.next("helper", 0.1)
        if item is not None:
            services.inbox.complete("helper", item.id, WorkResult(ok=True, text=f"did {item.text}"))


async def until(condition: Callable[[], bool], seconds: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "gave up waiting"
        await asyncio.sleep(0.02)


def test_the_loop_runs_a_workflow_through_its_approval(make_flows: MakeFlows) -> None:
    flows = make_flows(GATED)
    services = flows.services
    engine = services.workflows
    # Left running by an orchestrator that was killed: the loop's first pass takes it up.
    earlier = engine.start("gated", {})
    exporter, ids = InMemorySpanExporter(), PlannedIds()
    provider = provider_for("flows", exporter, ids)

    async def scenario() -> WorkflowRun:
        loop = asyncio.get_running_loop()
        services.inbox.bind_loop(loop)
        services.events.bind_loop(loop)
        service = WorkflowService(
            engine,
            WorkflowTriggers(engine, services.fleet_view, utcnow),
            services.inbox,
            services.events,
            lambda: timedelta(days=1),
            tick_s=30,  # far past the test: what moves the run is the loop's wakes, not its tick
            spans=RunSpans(provider, ids),
        )
        stop = asyncio.Event()
        tasks = [asyncio.create_task(service.run()), asyncio.create_task(answer_everything(services, stop))]
        try:
            run = engine.start("gated", {})
            for run_id in (earlier.id, run.id):
                await until(lambda run_id=run_id: engine.store.get(run_id).step("review").state == "approval")  # type: ignore[union-attr,misc]
                approval = engine.store.get(run_id).step("review").approval_id  # type: ignore[union-attr]
                assert approval is not None
                ApprovalStore(services.db, services.events).decide(approval, "approved")
                await until(lambda run_id=run_id: engine.store.get(run_id).state == "succeeded")  # type: ignore[union-attr,misc]
            found = engine.store.get(run.id)
            assert found is not None
            return found
        finally:
            stop.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    finished = asyncio.run(scenario())
    assert [step.state for step in finished.steps] == ["done", "done", "done"]
    assert finished.step("last").text == "did two"
    # The loop wrote each finished run as a trace (and shut its exporter down when it stopped).
    traces = {
        span.context.trace_id for span in exporter.get_finished_spans() if span.name == "workflow gated"
    }
    assert traces == {trace_id_of(earlier.id), trace_id_of(finished.id)}

"""A finished run as one OpenTelemetry trace: the run's span with a child span per step that went out."""

from __future__ import annotations

from collections.abc import Callable

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from workflow_helpers import Flows

from orchestrator.telemetry.otel_spans import PlannedIds, provider_for, trace_id_of
from orchestrator.workflows.spans import RunSpans, otlp_run_spans

MakeFlows = Callable[[str], Flows]

FLOW = """\
workflows:
  traced:
    steps:
      a: {agent: helper, instruction: one}
      b: {agent: helper, instruction: two, depends_on: [a], on_failure: continue}
      c: {agent: helper, instruction: three, depends_on: [b], when: "steps.b.state == 'done'"}
"""


def test_a_finished_run_is_one_trace_with_a_span_per_step(make_flows: MakeFlows) -> None:
    flows = make_flows(FLOW)
    run = flows.engine.start("traced", {})
    flows.clock.advance(2)
    flows.answer(run.id, "a", text="one done")
    flows.clock.advance(3)
    flows.answer(run.id, "b", ok=False, error="no luck")
    finished = flows.run(run.id)
    assert finished.state == "succeeded"

    exporter = InMemorySpanExporter()
    ids = PlannedIds()
    provider = provider_for("flows", exporter, ids)
    RunSpans(provider, ids).write(finished)
    provider.force_flush()
    spans = {span.name: span for span in exporter.get_finished_spans()}
    assert set(spans) == {"workflow traced", "step a", "step b"}  # c was skipped: it never went out
    root = spans["workflow traced"]
    assert {span.context.trace_id for span in spans.values()} == {trace_id_of(run.id)}
    assert spans["step a"].parent is not None and spans["step a"].parent.span_id == root.context.span_id
    assert root.attributes is not None and root.attributes["flotilla.workflow.run_id"] == run.id
    step_b = spans["step b"]
    assert step_b.attributes is not None and step_b.attributes["gen_ai.agent.name"] == "helper"
    assert step_b.status.status_code == StatusCode.ERROR
    assert step_b.end_time is not None and step_b.start_time is not None
    assert (step_b.end_time - step_b.start_time) / 1e9 == 3.0
    provider.shutdown()


def test_no_endpoint_no_writer() -> None:
    assert otlp_run_spans("flows", {}) is None

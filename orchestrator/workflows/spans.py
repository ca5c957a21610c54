"""A finished workflow run written as one OpenTelemetry trace, over OTLP when an endpoint is set
(the same setting as the request traces, docs/tracing.md):

    workflow {name}           the run, from its start to its end, with its state and cost
      step {step}             each step that went out, from its item's queueing (or its
                              approval's request) to its end, with agent, attempts, tokens, cost

The trace id is derived from the run id, so a tracing backend and `flotilla workflow show` name
the same run. The step's item is a request of its own and has its own trace (`flotilla trace`).
This module needs the opentelemetry SDK, imported only when an endpoint is configured.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

from orchestrator.telemetry.tracing import ENDPOINT_VARIABLES, otlp_endpoint
from orchestrator.workflows.store import StepRun, WorkflowRun

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

    from orchestrator.telemetry.otel_spans import PlannedIds

log = logging.getLogger(__name__)

FAILED_STATES = frozenset({"failed", "cancelled"})


class RunSpans:
    def __init__(self, provider: TracerProvider, ids: PlannedIds) -> None:
        from orchestrator.telemetry.otel_spans import SCOPE

        self._provider = provider
        self._tracer = provider.get_tracer(SCOPE)
        self._ids = ids
        self._lock = threading.Lock()

    def close(self) -> None:
        self._provider.shutdown()

    def write(self, run: WorkflowRun) -> None:
        from opentelemetry import trace
        from opentelemetry.trace import Status, StatusCode

        from orchestrator.telemetry.otel_spans import span_id_of, trace_id_of

        trace_id = trace_id_of(run.id)
        with self._lock:
            self._ids.plan(trace_id, span_id_of("workflow", run.id))
            root = self._tracer.start_span(f"workflow {run.workflow}", start_time=_ns(run.created_at))
            root.set_attributes(
                {
                    "flotilla.workflow": run.workflow,
                    "flotilla.workflow.run_id": run.id,
                    "flotilla.workflow.trigger": run.trigger,
                    "flotilla.state": run.state,
                    "flotilla.cost_usd": run.cost_usd,
                }
            )
            if run.state in FAILED_STATES:
                root.set_status(Status(StatusCode.ERROR, run.error or run.state))
            context = trace.set_span_in_context(root)
            for step in run.steps:
                started = step.queued_at or (run.created_at if step.approval_id else None)
                if started is None:
                    continue
                self._ids.plan(trace_id, span_id_of("workflow-step", run.id, step.step))
                span = self._tracer.start_span(f"step {step.step}", context=context, start_time=_ns(started))
                span.set_attributes(_step_attributes(step))
                if step.state in FAILED_STATES:
                    span.set_status(Status(StatusCode.ERROR, step.error or step.state))
                span.end(end_time=_ns(step.finished_at or run.finished_at or started))
            root.end(end_time=_ns(run.finished_at or run.created_at))


def _ns(moment: datetime) -> int:
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def _step_attributes(step: StepRun) -> dict[str, str | int | float]:
    found: dict[str, str | int | float] = {
        "flotilla.workflow.step": step.step,
        "flotilla.state": step.state,
        "flotilla.attempts": step.attempt,
        "gen_ai.usage.total_tokens": step.tokens,
        "flotilla.cost_usd": step.cost_usd,
    }
    if step.agent:
        found["gen_ai.agent.name"] = step.agent
    if step.item_id:
        found["flotilla.item_id"] = step.item_id
    return found


def otlp_run_spans(fleet: str, environ: Mapping[str, str] = os.environ) -> RunSpans | None:
    """A writer of finished runs over OTLP/HTTP when an endpoint is configured, else None."""
    if otlp_endpoint(environ) is None:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        from orchestrator.telemetry.otel_spans import PlannedIds, provider_for
    except ImportError as missing:
        log.warning("%s is set but OpenTelemetry is not installed: %s", ENDPOINT_VARIABLES[1], missing)
        return None
    ids = PlannedIds()
    return RunSpans(provider_for(fleet, OTLPSpanExporter(), ids), ids)

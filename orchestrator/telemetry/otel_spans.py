"""A finished request written as OpenTelemetry spans, with the GenAI semantic conventions.

    invoke_agent {agent}            the operator's message (or a heartbeat) to the first agent
      turn {agent}                  the agent's run that worked it
        chat {model}                each model call through the gateway (gen_ai.* attributes)
        execute_tool {tool}         each tool call, from the agent's turn log
        invoke_agent {peer}         each ask or tell it sent, with the peer's turn below it

Spans are written after the fact, from what the orchestrator recorded, with their real start
and end times. Their ids are derived from Flotilla's own: a request's trace id is its root
inbox item's id (a 32-hex id is used as it is), so `flotilla trace ID` and a tracing backend
name the same request. This module needs the opentelemetry SDK; `tracing` imports it only
when an OTLP endpoint is configured.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Span, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode

from agent_runtime.protocol import TranscriptMessage
from orchestrator.broker import RequestTrace, TraceStep
from orchestrator.gateway.ledger import LedgerRow

SCOPE = "flotilla.orchestrator"
HEX32 = frozenset("0123456789abcdef")


def trace_id_of(root_id: str) -> int:
    if len(root_id) == 32 and set(root_id) <= HEX32 and int(root_id, 16):
        return int(root_id, 16)
    return int(hashlib.sha256(root_id.encode()).hexdigest()[:32], 16) or 1


def span_id_of(*parts: str) -> int:
    return int(hashlib.sha256(":".join(parts).encode()).hexdigest()[:16], 16) or 1


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ns(moment: datetime) -> int:
    """Nanoseconds since the epoch, in integers (a float timestamp loses the microseconds)."""
    return (moment - EPOCH) // timedelta(microseconds=1) * 1000


def _seconds_ns(seconds: float) -> int:
    return round(seconds * 1_000_000) * 1000


class PlannedIds(IdGenerator):
    """Hands out the ids planned for the next span on this thread (random ones otherwise)."""

    def __init__(self) -> None:
        self._next = threading.local()
        self._random = RandomIdGenerator()

    def plan(self, trace_id: int, span_id: int) -> None:
        self._next.trace_id, self._next.span_id = trace_id, span_id

    def generate_trace_id(self) -> int:
        planned: int | None = getattr(self._next, "trace_id", None)
        self._next.trace_id = None
        return planned or self._random.generate_trace_id()

    def generate_span_id(self) -> int:
        planned: int | None = getattr(self._next, "span_id", None)
        self._next.span_id = None
        return planned or self._random.generate_span_id()


def provider_for(fleet: str, exporter: SpanExporter, ids: PlannedIds) -> TracerProvider:
    resource = Resource.create({"service.name": "flotilla-orchestrator", "flotilla.fleet": fleet})
    provider = TracerProvider(resource=resource, id_generator=ids)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


class SpanWriter:
    def __init__(self, provider: TracerProvider, ids: PlannedIds) -> None:
        self._provider = provider
        self._tracer = provider.get_tracer(SCOPE)
        self._ids = ids
        self._lock = threading.Lock()

    def close(self) -> None:
        self._provider.shutdown()

    def write(
        self,
        request: RequestTrace,
        calls: Mapping[str, list[LedgerRow]],
        tools: Mapping[str, list[TranscriptMessage]],
    ) -> None:
        """Every step of the request, its turn, model calls and tool calls, as one trace."""
        trace_id = trace_id_of(request.root_id)
        with self._lock:
            # A step's parent: the turn (else the step) of the last step one level up.
            parents: list[Span] = []
            for step in request.steps:
                del parents[step.depth :]
                parent = parents[-1] if parents else None
                step_span = self._step(trace_id, step, parent)
                below = step_span
                if step.run is not None:
                    below = self._turn(trace_id, step, step_span)
                    for call in calls.get(step.run.run_id, []):
                        self._model_call(trace_id, call, below)
                    for message in tools.get(step.item_id or "", []):
                        self._tool_calls(trace_id, message, tools.get(step.item_id or "", []), below)
                    below.end(end_time=_ns(step.run.started_at) + _seconds_ns(step.run.duration_s))
                parents.append(below)
                step_span.end(end_time=_ns(step.finished_at or step.claimed_at or step.created_at))

    def _start(
        self, trace_id: int, span_id: int, name: str, parent: Span | None, start: datetime, kind: SpanKind
    ) -> Span:
        self._ids.plan(trace_id, span_id)
        context = trace.set_span_in_context(parent) if parent is not None else None
        span = self._tracer.start_span(name, context=context, kind=kind, start_time=_ns(start))
        assert isinstance(span, Span)
        return span

    def _step(self, trace_id: int, step: TraceStep, parent: Span | None) -> Span:
        span = self._start(
            trace_id,
            span_id_of("step", step.id),
            f"invoke_agent {step.recipient}",
            parent,
            step.created_at,
            SpanKind.INTERNAL,
        )
        span.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": step.recipient,
                "flotilla.step.kind": step.kind,
                "flotilla.sender": step.sender,
                "flotilla.state": step.state,
                "flotilla.message_id": step.id,
            }
        )
        if step.operation:
            span.set_attribute("flotilla.operation", step.operation)
        if step.item_id:
            span.set_attribute("flotilla.item_id", step.item_id)
        if step.queued_s is not None:
            span.set_attribute("flotilla.queued_s", step.queued_s)
        if step.error or step.state in ("failed", "refused", "dead", "expired"):
            span.set_status(Status(StatusCode.ERROR, step.error or step.state))
        return span

    def _turn(self, trace_id: int, step: TraceStep, parent: Span) -> Span:
        run = step.run
        assert run is not None
        span = self._start(
            trace_id,
            span_id_of("turn", run.run_id),
            f"turn {step.recipient}",
            parent,
            run.started_at,
            SpanKind.INTERNAL,
        )
        span.set_attributes(
            {
                "gen_ai.agent.name": step.recipient,
                "flotilla.run_id": run.run_id,
                "flotilla.trigger": run.trigger,
                "flotilla.outcome": run.outcome,
                "gen_ai.usage.input_tokens": run.tokens_in,
                "gen_ai.usage.output_tokens": run.tokens_out,
                "flotilla.cost_usd": run.cost_usd,
            }
        )
        if run.model:
            span.set_attribute("gen_ai.request.model", run.model)
        if run.outcome in ("error", "limit"):
            span.set_status(Status(StatusCode.ERROR, run.detail or run.outcome))
        return span

    def _model_call(self, trace_id: int, call: LedgerRow, parent: Span) -> None:
        operation = "embeddings" if call.kind == "embedding" else "chat"
        span = self._start(
            trace_id,
            span_id_of("call", call.run_id or "", call.at.isoformat(), call.model),
            f"{operation} {call.model}",
            parent,
            call.at,
            SpanKind.CLIENT,
        )
        span.set_attributes(
            {
                "gen_ai.operation.name": operation,
                "gen_ai.provider.name": call.provider,
                "gen_ai.system": call.provider,
                "gen_ai.request.model": call.requested_model,
                "gen_ai.response.model": call.model,
                "gen_ai.usage.input_tokens": call.tokens_in,
                "gen_ai.usage.output_tokens": call.tokens_out,
                "flotilla.usage.cached_input_tokens": call.cached_tokens,
                "flotilla.cost_usd": call.cost_usd,
            }
        )
        if call.status != "ok":
            span.set_attribute("error.type", call.status)
            span.set_status(Status(StatusCode.ERROR, call.error or call.status))
        span.end(end_time=_ns(call.at) + _seconds_ns(call.latency_s))

    def _tool_calls(
        self, trace_id: int, message: TranscriptMessage, messages: list[TranscriptMessage], parent: Span
    ) -> None:
        results = {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}
        started = datetime.fromisoformat(message.at.replace("Z", "+00:00"))
        for call in message.tool_calls:
            span = self._start(
                trace_id,
                span_id_of("tool", message.id, call.id),
                f"execute_tool {call.name}",
                parent,
                started,
                SpanKind.INTERNAL,
            )
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.call.id": call.id,
                }
            )
            result = results.get(call.id)
            ended = (
                datetime.fromisoformat(result.at.replace("Z", "+00:00")) if result is not None else started
            )
            span.end(end_time=_ns(ended))

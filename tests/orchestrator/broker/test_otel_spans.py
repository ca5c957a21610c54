"""Request traces in OpenTelemetry: off by default; a finished request becomes one trace
(operator message -> turn -> model calls, tool calls, peer ask -> peer turn) with the GenAI
attributes, checked with the SDK's in-memory exporter and with a local OTLP/HTTP receiver."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_request_trace import operator_request_with_an_ask

from agent_runtime.protocol import RunOutcome, RunRecord, ToolCallView, TranscriptMessage
from orchestrator.gateway.ledger import Charge, Ledger
from orchestrator.scheduler.runs import RunStore
from orchestrator.services import Services
from orchestrator.telemetry.otel_spans import PlannedIds, SpanWriter
from orchestrator.telemetry.tracing import SpanExport, otlp_endpoint, otlp_sink


def model_call(services: Services, agent: str, run_id: str, tokens_in: int, latency_ms: int) -> None:
    ledger = Ledger(services.db)
    estimate = Charge(tokens_in=tokens_in, tokens_out=5, cost_usd=0.001)
    with services.db.transaction() as conn:
        row = Ledger.reserve(
            conn,
            at=datetime.now(UTC),
            agent=agent,
            kind="chat",
            model="test",
            provider="test",
            estimate=estimate,
            run_id=run_id,
        )
    ledger.settle(row, model="test", provider="test", charge=estimate, status="ok", latency_ms=latency_ms)


def finished_request(services: Services) -> str:
    """An operator's message to alpha, which calls a tool and asks beta; all settled."""
    operator_item, _ = operator_request_with_an_ask(services)
    now = datetime.now(UTC)
    RunStore(services.db).add_turn(
        RunRecord(
            id="run-alpha",
            agent="alpha",
            trigger="operator",
            item_id=operator_item,
            model="test",
            started_at=now - timedelta(seconds=1),
            finished_at=now,
            tokens_in=300,
            tokens_out=40,
            outcome=RunOutcome.OK,
        )
    )
    model_call(services, "alpha", "run-alpha", 200, 150)
    model_call(services, "alpha", "run-alpha", 100, 90)
    model_call(services, "beta", "run-beta", 50, 40)
    return operator_item


async def alpha_tools(agent: str, item_id: str) -> list[TranscriptMessage]:
    if agent != "alpha":
        return []
    start = datetime.now(UTC) - timedelta(seconds=0.8)
    stamp = [(start + timedelta(seconds=s)).isoformat().replace("+00:00", "Z") for s in (0, 0.25)]
    return [
        TranscriptMessage(
            id="t1",
            at=stamp[0],
            role="assistant",
            item_id=item_id,
            tool_calls=[ToolCallView(id="call_1", name="memory_save", arguments="{}")],
        ),
        TranscriptMessage(
            id="t2",
            at=stamp[1],
            role="tool",
            name="memory_save",
            tool_call_id="call_1",
            content="saved",
            item_id=item_id,
        ),
    ]


@pytest.fixture
def memory_exporter() -> Iterator[tuple[InMemorySpanExporter, SpanWriter]]:
    exporter = InMemorySpanExporter()
    ids = PlannedIds()
    provider = TracerProvider(id_generator=ids)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    writer = SpanWriter(provider, ids)
    yield exporter, writer
    writer.close()


def test_off_unless_an_endpoint_is_configured() -> None:
    assert otlp_endpoint({}) is None
    assert otlp_sink("fleet", {}) is None
    assert otlp_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) == "http://127.0.0.1:4318"


def test_a_finished_request_is_one_trace(
    services: Services, memory_exporter: tuple[InMemorySpanExporter, SpanWriter]
) -> None:
    exporter, writer = memory_exporter
    export = SpanExport(
        services.db, writer, alpha_tools, since=datetime.now(UTC) - timedelta(minutes=1), settle=timedelta(0)
    )
    operator_item = finished_request(services)
    assert asyncio.run(export.export_once()) == 1
    assert asyncio.run(export.export_once()) == 0  # written once

    spans = exporter.get_finished_spans()
    assert {span.context.trace_id for span in spans} == {int(operator_item, 16)}
    by_id = {span.context.span_id: span for span in spans}

    def parent_name(span: ReadableSpan) -> str | None:
        return by_id[span.parent.span_id].name if span.parent is not None else None

    tree = sorted((span.name, parent_name(span)) for span in spans)
    assert tree == sorted(
        [
            ("invoke_agent alpha", None),
            ("turn alpha", "invoke_agent alpha"),
            ("chat test", "turn alpha"),
            ("chat test", "turn alpha"),
            ("execute_tool memory_save", "turn alpha"),
            ("invoke_agent beta", "turn alpha"),
            ("turn beta", "invoke_agent beta"),
            ("chat test", "turn beta"),
        ]
    )
    calls = [span for span in spans if span.name == "chat test" and parent_name(span) == "turn alpha"]
    first = min(calls, key=lambda span: span.start_time or 0)
    assert first.attributes is not None
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.provider.name"] == "test"
    assert first.attributes["gen_ai.request.model"] == "test"
    assert first.attributes["gen_ai.usage.input_tokens"] == 200
    assert first.attributes["gen_ai.usage.output_tokens"] == 5
    assert (first.end_time or 0) - (first.start_time or 0) == 150_000_000
    ask = next(span for span in spans if span.name == "invoke_agent beta")
    assert ask.attributes is not None and ask.attributes["flotilla.operation"] == "summarize"
    tool = next(span for span in spans if span.name.startswith("execute_tool"))
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.call.id"] == "call_1"
    assert (tool.end_time or 0) - (tool.start_time or 0) == 250_000_000


class _Receiver(BaseHTTPRequestHandler):
    received: list[ExportTraceServiceRequest] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        type(self).received.append(request)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        return


def test_exported_over_otlp_http_to_a_local_receiver(services: Services) -> None:
    _Receiver.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
        with pytest.MonkeyPatch.context() as patch:
            # The standard variable, read by the OTLP exporter itself.
            patch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
            sink = otlp_sink("otel-test")
        assert sink is not None
        export = SpanExport(
            services.db, sink, since=datetime.now(UTC) - timedelta(minutes=1), settle=timedelta(0)
        )
        operator_item = finished_request(services)
        assert asyncio.run(export.export_once()) == 1
        sink.close()  # flushes the batch
    finally:
        server.shutdown()
        server.server_close()
    spans = [
        span
        for request in _Receiver.received
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert {span.trace_id.hex() for span in spans} == {operator_item}
    assert {span.name for span in spans} >= {"invoke_agent alpha", "turn alpha", "chat test", "turn beta"}
    resource = _Receiver.received[0].resource_spans[0].resource
    attributes = {a.key: a.value.string_value for a in resource.attributes}
    assert (
        attributes["service.name"] == "flotilla-orchestrator" and attributes["flotilla.fleet"] == "otel-test"
    )

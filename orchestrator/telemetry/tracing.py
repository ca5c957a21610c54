"""Requests exported as OpenTelemetry traces over OTLP: off unless an endpoint is configured.

Set the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or `OTEL_EXPORTER_OTLP_ENDPOINT` (and,
if needed, `OTEL_EXPORTER_OTLP_HEADERS`) in the orchestrator's environment, and install the
`otel` extra. Each request that began with an operator's message or a heartbeat is written once
it has finished (a few seconds after, so that its run records are in): see `otel_spans` for the
shape. Tool calls come from the agent's turn log, asked over its link when it is connected;
an agent that is not connected is not woken for it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Protocol

from pydantic import ValidationError

from agent_runtime.protocol import AgentOp, TranscriptMessage, TranscriptPage, utcnow
from orchestrator.broker import RequestTrace, RequestTracer, TraceNotFound, items_finished_between
from orchestrator.gateway.ledger import LedgerRow, calls_of_runs
from orchestrator.running_agents.requests import AgentLinks, AgentUnreachable
from orchestrator.state.db import Database

log = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
ROOT_KINDS = ["operator_message", "heartbeat", "hook"]
# Run records are posted right after an item is acknowledged; give them this long to arrive.
SETTLE = timedelta(seconds=5)
EXPORT_EVERY_S = 5.0

ToolMessages = Callable[[str, str], Awaitable[list[TranscriptMessage]]]


class SpanSink(Protocol):
    def write(
        self,
        request: RequestTrace,
        calls: Mapping[str, list[LedgerRow]],
        tools: Mapping[str, list[TranscriptMessage]],
    ) -> None: ...

    def close(self) -> None: ...


def otlp_endpoint(environ: Mapping[str, str] = os.environ) -> str | None:
    """The configured OTLP endpoint, or None: tracing is off."""
    return next((environ[name] for name in ENDPOINT_VARIABLES if environ.get(name)), None)


def otlp_sink(fleet: str, environ: Mapping[str, str] = os.environ) -> SpanSink | None:
    """A writer exporting over OTLP/HTTP when an endpoint is configured, else None."""
    endpoint = otlp_endpoint(environ)
    if endpoint is None:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        from orchestrator.telemetry.otel_spans import PlannedIds, SpanWriter, provider_for
    except ImportError as missing:
        log.warning(
            "%s is set but OpenTelemetry is not installed (pip install 'flotilla[otel]'): %s",
            ENDPOINT_VARIABLES[1],
            missing,
        )
        return None
    ids = PlannedIds()
    log.info("exporting request traces over OTLP to %s", endpoint)
    return SpanWriter(provider_for(fleet, OTLPSpanExporter(), ids), ids)


class SpanExport:
    """Finds the requests finished since the last pass and writes each as a trace."""

    def __init__(
        self,
        db: Database,
        sink: SpanSink,
        tool_messages: ToolMessages | None = None,
        *,
        since: datetime | None = None,
        settle: timedelta = SETTLE,
    ) -> None:
        self._db = db
        self._sink = sink
        self._tool_messages = tool_messages
        self._tracer = RequestTracer(db)
        self._cursor = ((since or utcnow()).isoformat(), "")
        self._settle = settle

    async def export_once(self) -> int:
        """Write the requests finished since the last pass; returns how many."""
        before = utcnow() - self._settle
        finished = await asyncio.to_thread(items_finished_between, self._db, ROOT_KINDS, self._cursor, before)
        for cursor, item in finished:
            try:
                request = await asyncio.to_thread(self._tracer.trace, item.id)
            except TraceNotFound:
                request = None
            if request is not None:
                calls = await asyncio.to_thread(self._calls, request)
                tools = await self._tools(request)
                await asyncio.to_thread(self._sink.write, request, calls, tools)
            self._cursor = cursor
        return len(finished)

    async def run(self, every_s: float = EXPORT_EVERY_S) -> None:
        try:
            while True:
                await self.export_once()
                await asyncio.sleep(every_s)
        finally:
            await asyncio.to_thread(self._sink.close)

    def _calls(self, request: RequestTrace) -> dict[str, list[LedgerRow]]:
        by_agent: dict[str, list[str]] = {}
        for step in request.steps:
            if step.run is not None:
                by_agent.setdefault(step.recipient, []).append(step.run.run_id)
        calls: dict[str, list[LedgerRow]] = {}
        for agent, run_ids in by_agent.items():
            for call in calls_of_runs(self._db, agent, run_ids):
                calls.setdefault(call.run_id or "", []).append(call)
        return calls

    async def _tools(self, request: RequestTrace) -> dict[str, list[TranscriptMessage]]:
        if self._tool_messages is None:
            return {}
        found: dict[str, list[TranscriptMessage]] = {}
        for step in request.steps:
            if step.run is not None and step.item_id:
                found[step.item_id] = await self._tool_messages(step.recipient, step.item_id)
        return found


TOOL_LOG_TIMEOUT_S = 10.0


def tool_messages_over(links: AgentLinks) -> ToolMessages:
    """Asks a connected agent for an item's tool calls and results; nothing from one that is not."""

    async def ask(agent: str, item_id: str) -> list[TranscriptMessage]:
        if not links.is_open(agent):
            return []
        try:
            answer = await links.request(
                agent, AgentOp.HISTORY_READ, {"item_id": item_id}, TOOL_LOG_TIMEOUT_S
            )
            page = TranscriptPage.model_validate(answer.body) if answer.status < 400 else TranscriptPage()
        except (AgentUnreachable, ValidationError) as failed:
            log.info("no tool calls of %s's item %s for its trace: %s", agent, item_id, failed)
            return []
        return [m for m in page.messages if m.tool_calls or m.role == "tool"]

    return ask


def trace_export(db: Database, links: AgentLinks, fleet: str) -> SpanExport | None:
    """The export of request traces, when an OTLP endpoint is configured (else None)."""
    sink = otlp_sink(fleet)
    return SpanExport(db, sink, tool_messages_over(links)) if sink is not None else None

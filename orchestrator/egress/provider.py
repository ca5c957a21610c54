"""The `http_request` host tool of one agent: checks, sends and records each request."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from pydantic import ValidationError

from agent_runtime.protocol import (
    OrchestratorTool,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
    approval_key,
    needs_approval,
)
from orchestrator.approvals import ApprovalStore
from orchestrator.config.egress import HTTP_TOOL, HttpPolicy
from orchestrator.config.tools import ToolsConfig
from orchestrator.egress.addresses import Resolver, system_resolver
from orchestrator.egress.answer import render_answer
from orchestrator.egress.budget import BudgetSpent, record_sent, spending
from orchestrator.egress.fetch import FetchFailed, FetchRefused, fetch
from orchestrator.egress.records import HTTP_REFUSED, HTTP_REQUESTED
from orchestrator.egress.request import INPUT_SCHEMA, HttpRequestArguments
from orchestrator.egress.secret_binding import FilledRequest, fill_secrets, host_check
from orchestrator.events import EventBus
from orchestrator.host_tools.base import HostToolRefused
from orchestrator.secrets import SecretError, SecretStore
from orchestrator.state.db import Database

log = logging.getLogger(__name__)

DETAIL_CHARS = 300
URL_SHOWN = 500
# A refusal quotes at most this much (redacted) of what it refuses, to the agent, events and logs.
REASON_CHARS = 300
DESCRIPTION = (
    "Make an HTTP request from the orchestrator (not from your container) under your fleet.yaml "
    "policy: only allowed URLs and methods, public addresses, a daily budget. Write credentials as "
    "{{secret:NAME}}; the answer is the status, selected headers and the body as text."
)


class HttpRequestRefused(HostToolRefused):
    """Outside the agent's `tools.http` policy; the message names the rule."""


class HttpRequestTool:
    """One agent's `http_request` tool, as its `tools.http` policy declares it."""

    def __init__(
        self,
        agent: str,
        tools: ToolsConfig,
        *,
        secrets: SecretStore,
        approvals: ApprovalStore,
        events: EventBus,
        db: Database,
        resolver: Resolver = system_resolver,
        charge_refusal: Callable[[], None] | None = None,
    ) -> None:
        """`charge_refusal` charges a refused call to the agent's rates (RateLimited past them)."""
        if tools.http is None:
            raise ValueError(f"agent {agent} has no tools.http policy")
        self._agent = agent
        self._tools = tools
        self._policy: HttpPolicy = tools.http
        self._secrets = secrets
        self._approvals = approvals
        self._events = events
        self._db = db
        self._resolver = resolver
        self._charge_refusal = charge_refusal

    def owns(self, name: str) -> bool:
        return name == HTTP_TOOL

    async def list(self) -> OrchestratorTools:
        tool = OrchestratorTool(
            name=HTTP_TOOL, server="http", kind="host", description=DESCRIPTION, input_schema=INPUT_SCHEMA
        )
        return OrchestratorTools(tools=[tool])

    async def call(self, request: OrchestratorToolCall) -> OrchestratorToolResult:
        try:
            arguments = HttpRequestArguments.model_validate(request.arguments)
        except ValidationError as bad:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in bad.errors()
            )
            return OrchestratorToolResult(ok=False, output=f"http_request: invalid arguments: {problems}")
        shown_url = self._shown(arguments.url)
        self._check_approved(request, arguments, shown_url)
        filled = self._outgoing(arguments, shown_url)
        timeout_s = min(arguments.timeout_s or self._policy.timeout_s, self._policy.timeout_s)
        try:
            async with spending(self._db, self._agent, self._policy.requests_per_day):
                return await self._send(filled, arguments, shown_url, timeout_s)
        except BudgetSpent as spent:
            raise self._refused(arguments.method, shown_url, str(spent)) from None

    async def _send(
        self, filled: FilledRequest, arguments: HttpRequestArguments, shown_url: str, timeout_s: float
    ) -> OrchestratorToolResult:
        started = time.monotonic()
        host = (urlsplit(filled.outgoing.url).hostname or "").lower()
        redaction = self._secrets.redaction
        try:
            fetched = await fetch(
                self._policy,
                filled.outgoing,
                self._resolver,
                timeout_s,
                lookahead=redaction.longest,
                check=host_check(self._secrets, filled.used),
            )
        except FetchRefused as refused:
            raise self._refused(arguments.method, shown_url, str(refused), sent=refused.sent) from None
        except FetchFailed as failed:
            problem = redaction.cut(str(failed), REASON_CHARS)
            self._record(
                arguments.method, shown_url, host, None, 0, time.monotonic() - started, problem, failed.sent
            )
            return OrchestratorToolResult(
                ok=False, output=f"http_request {arguments.method} {shown_url}: {problem}"
            )
        duration = time.monotonic() - started
        self._record(
            arguments.method,
            shown_url,
            fetched.host,
            fetched.status,
            min(len(fetched.body), self._policy.response_cap),
            duration,
            "",
            len(fetched.redirects) + 1,
        )
        # Decoding and text extraction of up to max_response_bytes: off the event loop.
        answer = await asyncio.to_thread(
            render_answer, fetched, arguments.readable, redaction, self._policy.response_cap
        )
        return OrchestratorToolResult(ok=True, output=answer)

    def _outgoing(self, arguments: HttpRequestArguments, shown_url: str) -> FilledRequest:
        """The request with its secret handles filled in (only the secrets granted to this agent,
        only in the places each secret allows)."""
        try:
            return fill_secrets(arguments, self._secrets, self._policy.secrets)
        except SecretError as unusable:
            raise self._refused(arguments.method, shown_url, f"tools.http.secrets: {unusable}") from None

    def _check_approved(
        self, request: OrchestratorToolCall, arguments: HttpRequestArguments, shown_url: str
    ) -> None:
        asked_as = needs_approval(self._tools.approval_required(), request.name, request.arguments)
        if asked_as is None:
            return
        key = approval_key(request.item_id, request.name, request.arguments)
        item = self._approvals.find(self._agent, key)
        if item is None or item.state != "approved" or item.tool != asked_as:
            state = item.state if item is not None else "not asked for"
            reason = f"tools.http.approval: {arguments.method} requests need an operator's approval (approval: {state})"
            raise self._refused(arguments.method, shown_url, reason)

    def _shown(self, url: str) -> str:
        """The URL as records show it: handles, never values, and bounded."""
        return self._secrets.cut(url, URL_SHOWN)

    def _refused(self, method: str, url: str, reason: str, sent: int = 0) -> HttpRequestRefused:
        """`sent`: requests that went out before a redirect was refused; they count in the budget.
        The refusal is charged to the agent's rates first: past them the call ends in RateLimited
        and leaves no record beyond the limit's own."""
        record_sent(self._db, self._agent, sent)
        if self._charge_refusal is not None:
            self._charge_refusal()
        reason = self._secrets.cut(reason, REASON_CHARS)
        log.warning("agent %s: http_request %s %s refused: %s", self._agent, method, url, reason)
        host = (urlsplit(url).hostname or "").lower()
        self._events.publish(
            HTTP_REFUSED,
            self._agent,
            method=method,
            url=url,
            host=host,
            rule=reason,
            sent=sent,
        )
        return HttpRequestRefused(reason)

    def _record(
        self,
        method: str,
        url: str,
        host: str,
        status: int | None,
        size: int,
        duration_s: float,
        problem: str,
        sent: int,
    ) -> None:
        log.info(
            "agent %s: http_request %s %s -> %s (%d bytes, %.3f s)",
            self._agent,
            method,
            url,
            status or problem,
            size,
            duration_s,
        )
        record_sent(self._db, self._agent, sent)
        self._events.publish(
            HTTP_REQUESTED,
            self._agent,
            method=method,
            url=url,
            host=host,
            status=status,
            bytes=size,
            duration_s=round(duration_s, 3),
            ok=status is not None,
            detail=problem[:DETAIL_CHARS],
            sent=sent,
        )

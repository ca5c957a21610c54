"""The `web_search` tool of one agent: the query sent to its provider through the egress policy
of `tools.http`, the results read back as title, URL and snippet, and a `web_search.ran` event."""

from __future__ import annotations

import builtins
import logging
import time
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_runtime.protocol import (
    OrchestratorTool,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from orchestrator.config.browser import SearchProvider
from orchestrator.config.egress import HttpPolicy
from orchestrator.egress.addresses import Resolver, system_resolver
from orchestrator.egress.budget import BudgetSpent, record_sent, spending
from orchestrator.egress.fetch import FetchFailed, FetchRefused, Outgoing, fetch
from orchestrator.events import EventBus
from orchestrator.host_tools.base import HostToolRefused
from orchestrator.secrets import SecretError, SecretStore
from orchestrator.state.db import Database
from orchestrator.web_search.adapters import AnswerUnreadable, SearchResult, read_results, search_url

log = logging.getLogger(__name__)

WEB_SEARCH = "web_search"
WEB_SEARCHED = "web_search.ran"
"""A search was made: query (redacted), host, ok, results, detail, duration_s."""
DETAIL_CHARS = 300
DESCRIPTION = (
    "Search the web with the provider your operator declared (the orchestrator sends the query under "
    "your tools.http policy and budget); results are title, URL and snippet"
)


class SearchArguments(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(min_length=1, max_length=500, description="What to search for")


class WebSearchRefused(HostToolRefused):
    """Outside the agent's policy or budget; the message names the rule."""


class WebSearchTool:
    def __init__(
        self,
        agent: str,
        provider: SearchProvider,
        http: HttpPolicy,
        *,
        secrets: SecretStore,
        events: EventBus,
        db: Database,
        resolver: Resolver = system_resolver,
    ) -> None:
        self._agent = agent
        self._provider = provider
        self._http = http
        self._secrets = secrets
        self._events = events
        self._db = db
        self._resolver = resolver

    def owns(self, name: str) -> bool:
        return name == WEB_SEARCH

    async def list(self) -> OrchestratorTools:
        tool = OrchestratorTool(
            name=WEB_SEARCH,
            server="search",
            kind="host",
            description=DESCRIPTION,
            input_schema=SearchArguments.model_json_schema(),
        )
        return OrchestratorTools(tools=[tool])

    async def call(self, request: OrchestratorToolCall) -> OrchestratorToolResult:
        try:
            arguments = SearchArguments.model_validate(request.arguments)
        except ValidationError as bad:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in bad.errors())
            return OrchestratorToolResult(ok=False, output=f"web_search: invalid arguments: {problems}")
        query = self._secrets.redact(arguments.query)
        outgoing = self._outgoing(arguments.query, query)
        started = time.monotonic()
        try:
            async with spending(self._db, self._agent, self._http.requests_per_day):
                fetched = await fetch(self._http, outgoing, self._resolver, self._http.timeout_s)
        except BudgetSpent as spent:
            raise self._refused(query, str(spent)) from None
        except FetchRefused as refused:
            record_sent(self._db, self._agent, refused.sent)
            raise self._refused(query, self._secrets.redact(str(refused))) from None
        except FetchFailed as failed:
            record_sent(self._db, self._agent, failed.sent)
            return self._answer(query, started, [], self._secrets.redact(str(failed)))
        record_sent(self._db, self._agent, len(fetched.redirects) + 1)
        if fetched.status != 200:
            return self._answer(query, started, [], f"the provider answered HTTP {fetched.status}")
        try:
            results = read_results(self._provider.kind, fetched.body, self._provider.results)
        except AnswerUnreadable as unreadable:
            return self._answer(query, started, [], str(unreadable))
        return self._answer(query, started, results, "")

    def _outgoing(self, query: str, shown: str) -> Outgoing:
        granted = self._provider.secrets()
        try:
            headers = {
                name: self._secrets.substitute(value, granted)
                for name, value in self._provider.headers.items()
            }
        except SecretError as unusable:
            raise self._refused(shown, f"tools.search.headers: {unusable}") from None
        with_secrets = frozenset(
            name for name, value in self._provider.headers.items() if "{{secret:" in value
        )
        headers.setdefault("accept", "application/json")
        return Outgoing("GET", search_url(self._provider, query), headers, None, with_secrets)

    def _answer(
        self, query: str, started: float, results: builtins.list[SearchResult], problem: str
    ) -> OrchestratorToolResult:
        self._events.publish(
            WEB_SEARCHED,
            self._agent,
            query=query[:DETAIL_CHARS],
            host=(urlsplit(self._provider.url).hostname or "").lower(),
            ok=not problem,
            results=len(results),
            detail=problem[:DETAIL_CHARS],
            duration_s=round(time.monotonic() - started, 3),
        )
        if problem:
            return OrchestratorToolResult(ok=False, output=f"web_search: {problem}")
        if not results:
            return OrchestratorToolResult(ok=True, output=f"no results for {query!r}")
        lines = [f"{n}. {r.title}\n   {r.url}\n   {r.snippet}" for n, r in enumerate(results, 1)]
        return OrchestratorToolResult(ok=True, output=self._secrets.redact("\n".join(lines)))

    def _refused(self, query: str, reason: str) -> WebSearchRefused:
        log.warning("agent %s: web_search refused: %s", self._agent, reason)
        self._events.publish(
            WEB_SEARCHED, self._agent, query=query[:DETAIL_CHARS], ok=False, refused=reason[:DETAIL_CHARS]
        )
        return WebSearchRefused(reason)

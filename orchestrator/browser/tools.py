"""The browser_* tools of one agent: checked against its `tools.browser` and `tools.http`
policies, run in the agent's browser session for the item, and recorded as `browser.action`
events (a refusal as `browser.refused`), redacted, with the page requests each action made."""

from __future__ import annotations

import builtins
import logging
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

from agent_runtime.protocol import (
    OrchestratorTool,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from orchestrator.browser.arguments import (
    BROWSER_CLOSE,
    BROWSER_EVALUATE,
    BROWSER_SNAPSHOT,
    TOOLS,
    ClickArguments,
    EvaluateArguments,
    NavigateArguments,
    ScreenshotArguments,
    TypeArguments,
    input_schema,
    parse,
)
from orchestrator.browser.proxy import ProxiedRequest
from orchestrator.browser.sandbox import SandboxFailed
from orchestrator.browser.screenshots import ScreenshotShelf, default_name
from orchestrator.browser.session import PageText, SessionEnded, SessionFailed
from orchestrator.browser.sessions import AgentBrowsing, BrowserSessions, OpenSession
from orchestrator.config.browser import BrowserPolicy
from orchestrator.config.egress import HttpPolicy
from orchestrator.config.secrets import secret_handles
from orchestrator.egress.policy import PolicyRefused, allowed_rule, parse_target
from orchestrator.events import EventBus
from orchestrator.host_tools.base import HostToolRefused
from orchestrator.secrets import SecretError, SecretStore

log = logging.getLogger(__name__)

BROWSER_ACTION = "browser.action"
"""A browser action ran: tool, session, url, ok, detail, bytes (of what came back to the agent
or was saved), requests (page requests it made through the proxy), refused (their refusals) and,
for a screenshot, file (its path in the workspace, screenshots/<name>.png) and version."""
BROWSER_REFUSED = "browser.refused"
"""A browser call refused by the policy: tool, session, rule."""
REFUSALS_SHOWN = 5
DETAIL_CHARS = 300


@dataclass(frozen=True)
class ActionOutcome:
    """What an action returns to the agent, its size, and the screenshot it saved (if any)."""

    output: str
    size: int
    file: str = ""
    version: int = 0


class BrowserRefused(HostToolRefused):
    """Outside the agent's tools.browser or tools.http policy; the message names the rule."""


@dataclass(frozen=True)
class BrowserContextParts:
    """What one agent's browser tools work with, taken from the orchestrator's parts."""

    fleet: str
    agent: str
    image: str
    http: HttpPolicy
    browser: BrowserPolicy
    sessions: BrowserSessions
    secrets: SecretStore
    events: EventBus
    screenshots: ScreenshotShelf


class BrowserTools:
    def __init__(self, parts: BrowserContextParts) -> None:
        self._parts = parts
        self._browsing = AgentBrowsing(parts.fleet, parts.agent, parts.image, parts.http, parts.browser)

    def owns(self, name: str) -> bool:
        return name in self._offered()

    async def list(self) -> OrchestratorTools:
        return OrchestratorTools(
            tools=[
                OrchestratorTool(
                    name=name,
                    server="browser",
                    kind="host",
                    description=TOOLS[name][1],
                    input_schema=input_schema(name),
                )
                for name in self._offered()
            ]
        )

    async def call(self, request: OrchestratorToolCall) -> OrchestratorToolResult:
        if request.name == BROWSER_EVALUATE and not self._parts.browser.evaluate:
            raise self._refused(
                request.name,
                "",
                "tools.browser.evaluate: running the agent's JavaScript in pages is not allowed",
            )
        parsed = parse(request.name, request.arguments)
        if isinstance(parsed, str):
            return OrchestratorToolResult(ok=False, output=f"{request.name}: invalid arguments: {parsed}")
        if isinstance(parsed, NavigateArguments):
            self._check_url(request.name, parsed.session, parsed.url)
        item = request.item_id or ""
        if request.name == BROWSER_CLOSE:
            await self._parts.sessions.close((self._parts.agent, item, parsed.session))
            return OrchestratorToolResult(ok=True, output=f"browser session {parsed.session} closed")
        text = self._filled(request.name, parsed) if isinstance(parsed, TypeArguments) else ""
        started = time.monotonic()
        try:
            session = await self._parts.sessions.get(self._browsing, item, parsed.session)
        except (SandboxFailed, SessionFailed) as failed:
            return self._failed(request.name, parsed.session, "", str(failed), [], started)
        if isinstance(parsed, TypeArguments):
            self._check_secret_hosts(request.name, parsed, session.page.url)
        try:
            outcome = await self._run(session, request.name, parsed, text)
        except SessionFailed as failed:
            if isinstance(failed, SessionEnded):
                await self._parts.sessions.close(session.key)
            return self._failed(
                request.name, parsed.session, session.page.url, str(failed), session.requests.drain(), started
            )
        requests = session.requests.drain()
        self._publish(
            request.name,
            parsed.session,
            session.page.url,
            True,
            "",
            outcome.size,
            requests,
            started,
            outcome,
        )
        # Page requests refused since the last action, whichever action the page made them in.
        shown = self._parts.secrets.redact(outcome.output + _refusals_note(requests))
        return OrchestratorToolResult(ok=True, output=shown)

    async def _run(self, session: OpenSession, name: str, parsed: object, text: str) -> ActionOutcome:
        page = session.page
        if isinstance(parsed, NavigateArguments):
            read = await page.navigate(parsed.url)
            return ActionOutcome(_page_answer(read), len(read.text))
        if name == BROWSER_SNAPSHOT:
            snapshot = await page.snapshot()
            return ActionOutcome(snapshot, len(snapshot))
        if isinstance(parsed, ClickArguments):
            await page.click(parsed.ref)
            read = await page.read()
            return ActionOutcome(_page_answer(read), len(read.text))
        if isinstance(parsed, TypeArguments):
            await page.type(parsed.ref, text, parsed.submit)
            if not parsed.submit:
                return ActionOutcome(f"typed into {parsed.ref}", 0)
            read = await page.read()
            return ActionOutcome(_page_answer(read), len(read.text))
        if isinstance(parsed, ScreenshotArguments):
            png = await page.screenshot()
            saved = self._parts.screenshots.keep(
                self._parts.agent,
                parsed.name or default_name(session.key[1]),
                png,
                self._parts.secrets.redact(page.url),
            )
            return ActionOutcome(
                f"screenshot saved as {saved.name} version {saved.version} ({saved.size} bytes, PNG) "
                "in your workspace",
                saved.size,
                saved.name,
                saved.version,
            )
        if isinstance(parsed, EvaluateArguments):
            result = await page.evaluate(parsed.expression)
            return ActionOutcome(result[: self._parts.browser.text_chars], len(result))
        raise SessionFailed(f"{name}: not a browser tool")

    def _offered(self) -> builtins.list[str]:
        return [name for name in TOOLS if name != BROWSER_EVALUATE or self._parts.browser.evaluate]

    def _check_url(self, tool: str, session: str, url: str) -> None:
        try:
            target = parse_target(url)
            allowed_rule(self._parts.http, "GET", target)
        except PolicyRefused as refused:
            raise self._refused(tool, session, str(refused)) from None

    def _filled(self, tool: str, parsed: TypeArguments) -> str:
        """The text with its secret handles filled in: only secrets granted in tools.http.secrets."""
        try:
            return self._parts.secrets.substitute(parsed.text, self._parts.http.secrets)
        except SecretError as unusable:
            raise self._refused(tool, parsed.session, f"tools.http.secrets: {unusable}") from None

    def _check_secret_hosts(self, tool: str, parsed: TypeArguments, page_url: str) -> None:
        """A secret typed into a page goes to that page's host: only one its secret names, and
        only when the secret may be put in a request's body (what a form sends)."""
        problem = typed_secret_problem(self._parts.secrets, parsed.text, page_url)
        if problem is not None:
            raise self._refused(tool, parsed.session, problem)

    def _refused(self, tool: str, session: str, reason: str) -> BrowserRefused:
        reason = self._parts.secrets.redact(reason)
        log.warning("agent %s: %s refused: %s", self._parts.agent, tool, reason)
        self._parts.events.publish(
            BROWSER_REFUSED, self._parts.agent, tool=tool, session=session, rule=reason[:DETAIL_CHARS]
        )
        return BrowserRefused(reason)

    def _failed(
        self,
        tool: str,
        session: str,
        url: str,
        problem: str,
        requests: builtins.list[ProxiedRequest],
        started: float,
    ) -> OrchestratorToolResult:
        problem = self._parts.secrets.redact(problem)
        self._publish(tool, session, url, False, problem, 0, requests, started)
        return OrchestratorToolResult(ok=False, output=f"{tool}: {problem}{_refusals_note(requests)}")

    def _publish(
        self,
        tool: str,
        session: str,
        url: str,
        ok: bool,
        detail: str,
        size: int,
        requests: builtins.list[ProxiedRequest],
        started: float,
        outcome: ActionOutcome | None = None,
    ) -> None:
        redact = self._parts.secrets.redact
        refused = list(
            dict.fromkeys(
                redact(f"{r.method} {r.url}: {r.refused}")[:DETAIL_CHARS] for r in requests if r.refused
            )
        )
        self._parts.events.publish(
            BROWSER_ACTION,
            self._parts.agent,
            tool=tool,
            session=session,
            url=redact(url)[:500],
            host=(urlsplit(url).hostname or "").lower(),
            ok=ok,
            detail=detail[:DETAIL_CHARS],
            bytes=size,
            requests=len(requests),
            refused=refused[:REFUSALS_SHOWN],
            duration_s=round(time.monotonic() - started, 3),
            **({"file": outcome.file, "version": outcome.version} if outcome and outcome.file else {}),
        )


def _page_answer(read: PageText) -> str:
    status = f" (HTTP {read.status})" if read.status is not None else ""
    lines = [f"url: {read.url}{status}", f"title: {read.title}", "", read.text]
    return "\n".join(lines)


def _refusals_note(requests: list[ProxiedRequest]) -> str:
    """The distinct requests refused, the page's and Chromium's own (sign-in, updates) alike."""
    refused = list(dict.fromkeys(f"- {r.method} {r.url[:200]}: {r.refused}" for r in requests if r.refused))
    if not refused:
        return ""
    more = f"\n(and {len(refused) - REFUSALS_SHOWN} more)" if len(refused) > REFUSALS_SHOWN else ""
    return "\n\n--- requests refused by your egress policy ---\n" + "\n".join(refused[:REFUSALS_SHOWN]) + more


def typed_secret_problem(store: SecretStore, text: str, page_url: str) -> str | None:
    """Why the secrets named in `text` may not be typed into the page at `page_url`, or None."""
    host = urlsplit(page_url).hostname or ""
    for name in secret_handles(text):
        source = store.source(name)
        if source is None or source.hosts is None:
            continue  # undeclared: substitute() refuses it; unbound: any allowed page (deprecated)
        if not source.allows_host(host):
            return f"secrets.{name}.hosts: the secret goes only to {', '.join(source.hosts)}, not to {host or page_url!r}"
        if "body" not in source.allowed_places():
            return f"secrets.{name}.places: typing it into a page sends it in a request's body, which the secret does not allow"
    return None

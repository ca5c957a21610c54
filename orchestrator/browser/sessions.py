"""The browser sessions of the fleet: opened on an agent's first browser call of an item, closed
when the item ends, when idle past `tools.browser.idle_timeout`, when the agent holds more than
`tools.browser.sessions` (the least recently used goes), when a later item of the agent opens one,
or at the orchestrator's stop.

Each session is a sandbox (`orchestrator.browser.sandbox`), its egress proxy
(`orchestrator.browser.proxy`) holding the agent's `tools.http` policy and daily budget, and the
page driven over CDP (`orchestrator.browser.session`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orchestrator.backends.base import BackendUnavailable
from orchestrator.browser.proxy import EgressProxy, ProxyLog
from orchestrator.browser.sandbox import BrowserSandbox, DockerBrowsers, SandboxFailed, SandboxSpec
from orchestrator.browser.session import BrowserSession, start_driver
from orchestrator.config.browser import BrowserPolicy
from orchestrator.config.egress import HttpPolicy
from orchestrator.egress.addresses import Resolver, system_resolver
from orchestrator.egress.budget import record_sent, spending
from orchestrator.state.db import Database

if TYPE_CHECKING:
    from playwright.async_api import Playwright

log = logging.getLogger(__name__)

REAP_EVERY_S = 5.0
SessionKey = tuple[str, str, str]
"""(agent, item id or "", session name)."""


@dataclass
class OpenSession:
    key: SessionKey
    sandbox: BrowserSandbox
    proxy: EgressProxy
    requests: ProxyLog
    page: BrowserSession
    opened: float

    @property
    def idle_s(self) -> float:
        return time.monotonic() - self.page.state.last_used


@dataclass(frozen=True)
class AgentBrowsing:
    """What a session of one agent is opened with."""

    fleet: str
    agent: str
    image: str
    http: HttpPolicy
    browser: BrowserPolicy


class BrowserSessions:
    """Every open browser session of the orchestrator, by agent, item and name."""

    def __init__(
        self,
        db: Database,
        docker_client: Callable[[], Any],
        resolver: Resolver = system_resolver,
        upstream_tls: ssl.SSLContext | None = None,
    ) -> None:
        """`upstream_tls` verifies the sites' certificates (default: certifi's authorities)."""
        self._db = db
        self._docker_client = docker_client
        self._resolver = resolver
        self._upstream_tls = upstream_tls
        self._browsers: DockerBrowsers | None = None
        self._driver: Playwright | None = None
        self._sessions: dict[SessionKey, OpenSession] = {}
        self._opening: dict[SessionKey, asyncio.Lock] = {}
        self._reaper: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing: set[asyncio.Task[None]] = set()
        self._swept: set[str] = set()

    def open_count(self, agent: str | None = None) -> int:
        return sum(1 for key in self._sessions if agent is None or key[0] == agent)

    async def get(self, browsing: AgentBrowsing, item: str, name: str) -> OpenSession:
        """The session named `name` of the agent's item, opened on first use."""
        key = (browsing.agent, item, name)
        lock = self._opening.setdefault(key, asyncio.Lock())
        async with lock:
            found = self._sessions.get(key)
            if found is not None and not found.page.state.crashed:
                return found
            if found is not None:
                await self.close(key)
            await self._make_room(browsing, item)
            self._loop = asyncio.get_running_loop()
            opened = await self._open(browsing, key)
            self._sessions[key] = opened
            self._start_reaper()
            return opened

    async def close(self, key: SessionKey) -> None:
        lock = self._opening.get(key)
        if lock is not None and not lock.locked():
            del self._opening[key]
        found = self._sessions.pop(key, None)
        if found is None:
            return
        await found.page.close()
        await found.proxy.close()
        await asyncio.to_thread(self._docker().remove, found.sandbox)
        log.info("browser session %s of agent %s closed", key[2], key[0])

    def item_ended(self, agent: str, item: str) -> None:
        """The agent's item is done: its sessions close (callable from any thread)."""
        loop = self._loop
        if loop is None or not any(key[:2] == (agent, item) for key in list(self._sessions)):
            return
        loop.call_soon_threadsafe(self._close_item_soon, agent, item)

    def _close_item_soon(self, agent: str, item: str) -> None:
        task = asyncio.get_running_loop().create_task(self._close_item(agent, item))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def _close_item(self, agent: str, item: str) -> None:
        for key in [key for key in self._sessions if key[:2] == (agent, item)]:
            await self.close(key)

    async def close_agent(self, agent: str) -> None:
        for key in [key for key in self._sessions if key[0] == agent]:
            await self.close(key)

    async def close_all(self) -> None:
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        for key in list(self._sessions):
            await self.close(key)
        if self._driver is not None:
            with contextlib.suppress(Exception):
                await self._driver.stop()
            self._driver = None

    def memory_used(self, key: SessionKey) -> int:
        found = self._sessions.get(key)
        return self._docker().memory_used(found.sandbox) if found is not None else 0

    async def _open(self, browsing: AgentBrowsing, key: SessionKey) -> OpenSession:
        requests = ProxyLog()
        policy = browsing.http

        async def admit() -> None:
            async with spending(self._db, browsing.agent, policy.requests_per_day):
                record_sent(self._db, browsing.agent, 1)

        # The browser extra's `cryptography`, loaded when a fleet first browses.
        from orchestrator.browser.interception import Interception

        interception = Interception()
        proxy = EgressProxy(
            policy,
            self._resolver,
            admit,
            record=requests,
            interception=interception,
            upstream_tls=self._upstream_tls,
        )

        async def start_proxy(gateway: str) -> int:
            return await proxy.start(gateway)

        spec = SandboxSpec(
            browsing.fleet, browsing.agent, browsing.image, browsing.browser, interception.spki_hash
        )
        if browsing.fleet not in self._swept:
            self._swept.add(browsing.fleet)
            left = await asyncio.to_thread(self._docker().remove_left_behind, browsing.fleet)
            if left:
                log.info(
                    "removed %d browser sandboxes of fleet %s left by an earlier run", left, browsing.fleet
                )
        try:
            sandbox = await self._docker().open(spec, start_proxy)
        except BaseException:
            await proxy.close()
            raise
        proxy.serve_only(sandbox.address)
        try:
            if self._driver is None:
                self._driver = await start_driver()
            page = await BrowserSession.connect(self._driver, sandbox.devtools_url, browsing.browser)
        except BaseException:
            await proxy.close()
            await asyncio.to_thread(self._docker().remove, sandbox)
            raise
        log.info("browser session %s of agent %s opened (%s)", key[2], key[0], sandbox.address)
        return OpenSession(key, sandbox, proxy, requests, page, time.monotonic())

    async def _make_room(self, browsing: AgentBrowsing, item: str) -> None:
        """Close the agent's sessions of earlier items, then its least recently used past the cap."""
        mine = [found for key, found in self._sessions.items() if key[0] == browsing.agent]
        for found in mine:
            if found.key[1] != item:
                await self.close(found.key)
        mine = sorted(
            (found for key, found in self._sessions.items() if key[0] == browsing.agent),
            key=lambda found: found.page.state.last_used,
        )
        while len(mine) >= browsing.browser.sessions:
            await self.close(mine.pop(0).key)

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        while self._sessions:
            await asyncio.sleep(REAP_EVERY_S)
            for key, found in list(self._sessions.items()):
                if found.idle_s > found.page.idle_timeout_s or found.page.state.crashed:
                    await self.close(key)

    def _docker(self) -> DockerBrowsers:
        if self._browsers is None:
            try:
                self._browsers = DockerBrowsers(self._docker_client())
            except BackendUnavailable as unavailable:
                raise SandboxFailed(
                    f"the browser runs in a Docker sandbox and no Docker engine answers: {unavailable}"
                ) from None
        return self._browsers

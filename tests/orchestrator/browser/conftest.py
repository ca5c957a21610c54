"""The browser image and a harness that drives the browser tools as the agent API would."""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_runtime.protocol import OrchestratorToolCall, OrchestratorToolResult
from orchestrator.backends.base import BackendUnavailable
from orchestrator.backends.docker import connect_docker
from orchestrator.browser import BrowserContextParts, BrowserSessions, BrowserTools
from orchestrator.browser.image import ensure_browser_image
from orchestrator.browser.screenshots import ScreenshotPlace, ScreenshotShelf
from orchestrator.config.secrets import SecretSource
from orchestrator.config.tools import ToolsConfig
from orchestrator.egress.addresses import Resolver, system_resolver
from orchestrator.events import EventBus
from orchestrator.images.build import default_repo_root
from orchestrator.secrets import SecretStore
from orchestrator.state.db import Database
from tests.orchestrator.browser.pages import Listener, LocalSite, start_listener, start_site

PASSWORD = "pw-7c1e94b2d0-value"


@pytest.fixture(scope="session")
def browser_image_tag() -> str:
    """The browser image, built when missing (minutes the first time: debootstrap and chromium)."""
    try:
        connect_docker().close()
    except BackendUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Docker: {exc}")
        pytest.skip(str(exc))
    return ensure_browser_image(default_repo_root()).tag


@pytest.fixture
def docker_client(browser_image_tag: str) -> Iterator[Any]:
    client = connect_docker()
    yield client
    client.close()


@pytest.fixture
def site() -> Iterator[LocalSite]:
    running = start_site()
    yield running
    running.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = start_listener("0.0.0.0")
    yield running
    running.close()


class Browsing:
    """One agent's browser tools over real sandboxes, with its events and secrets at hand."""

    def __init__(
        self,
        tmp_path: Path,
        image: str,
        tools: dict[str, Any],
        resolver: Resolver = system_resolver,
        secret: SecretSource | None = None,
        upstream_tls: ssl.SSLContext | None = None,
    ) -> None:
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.db = Database(tmp_path / "state.db")
        self.events = EventBus(self.db)
        self.secrets = SecretStore(
            {"site_password": secret or SecretSource(env="SITE_PASSWORD")},
            tmp_path,
            {"SITE_PASSWORD": PASSWORD},
        )
        self.secrets.load_all()
        self.tools = ToolsConfig.model_validate(tools)
        assert self.tools.http is not None and self.tools.browser is not None
        self.sessions = BrowserSessions(self.db, connect_docker, resolver, upstream_tls)
        self.shelf = ScreenshotShelf(
            ScreenshotPlace(lambda agent: tmp_path / "agents" / agent, {"scout": self.tools.browser})
        )
        self.provider = BrowserTools(
            BrowserContextParts(
                fleet="flt-test-browser",
                agent="scout",
                image=image,
                http=self.tools.http,
                browser=self.tools.browser,
                sessions=self.sessions,
                secrets=self.secrets,
                events=self.events,
                screenshots=self.shelf,
            )
        )

    async def call(self, tool: str, /, **arguments: Any) -> OrchestratorToolResult:
        return await self.provider.call(
            OrchestratorToolCall(name=tool, arguments=arguments, item_id="item-1")
        )

    def recorded(self) -> str:
        """Everything the events hold, as text."""
        rows = self.db.query("SELECT type, data FROM events ORDER BY seq")
        return "\n".join(f"{row['type']} {row['data']}" for row in rows)


def browse(
    tmp_path: Path,
    image: str,
    site: LocalSite,
    scenario: Callable[[Browsing], Awaitable[None]],
    *,
    browser: dict[str, Any] | None = None,
    resolver: Resolver = system_resolver,
    secret: SecretSource | None = None,
) -> Browsing:
    """Run `scenario` with an agent allowed the local site only (GET and POST), then close its sessions."""
    tools = {
        "http": {
            "allow": [{"url": site.url("/"), "allow_private": True}],
            "methods": ["GET", "POST"],
            "secrets": ["site_password"],
        },
        "browser": browser or {},
    }
    browsing = Browsing(tmp_path, image, tools, resolver, secret)

    async def run() -> None:
        try:
            await scenario(browsing)
        finally:
            await browsing.sessions.close_all()

    asyncio.run(run())
    return browsing

"""tools.browser and tools.search in fleet.yaml, without Docker: what they need, what an agent
without them keeps (no image built, the same settings), and a browser call where no engine runs."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest
from rich.console import Console

from agent_runtime.protocol import OrchestratorToolCall
from orchestrator.backends.base import BackendUnavailable
from orchestrator.browser import BrowserContextParts, BrowserSessions, BrowserTools
from orchestrator.browser.screenshots import ScreenshotPlace, ScreenshotShelf
from orchestrator.cli import launch_options
from orchestrator.config.loader import load_fleet
from orchestrator.config.settings import agent_settings, container_hash
from orchestrator.config.tools import ToolsConfig
from orchestrator.events import EventBus
from orchestrator.secrets import SecretStore
from orchestrator.state.db import Database

FLEET = """\
version: 1
fleet: settings
agents:
  plain:
    role: fetches
    tools:
      http: {allow: ["https://api.example/"]}
"""


def test_search_and_browser_need_tools_http() -> None:
    with pytest.raises(ValueError, match=r"tools\.search needs tools\.http"):
        ToolsConfig.model_validate({"search": {"kind": "searxng", "url": "https://searx.example/search"}})
    with pytest.raises(ValueError, match=r"tools\.browser needs tools\.http"):
        ToolsConfig.model_validate({"browser": {}})
    with pytest.raises(ValueError, match=r"below the floor"):
        ToolsConfig.model_validate({"http": {}, "browser": {"memory": "16m"}})
    with pytest.raises(ValueError, match=r"WIDTHxHEIGHT"):
        ToolsConfig.model_validate({"http": {}, "browser": {"window": "huge"}})
    with pytest.raises(ValueError, match=r"kind"):
        ToolsConfig.model_validate({"http": {}, "search": {"kind": "altavista", "url": "https://a.example/"}})


def test_an_agent_without_a_browser_keeps_its_settings_and_builds_no_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(FLEET))
    fleet = load_fleet(tmp_path / "fleet.yaml")
    settings = agent_settings(fleet, "plain")
    assert not [name for name in settings if name.startswith(("tools.browser", "tools.search"))]

    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("the browser image was built for a fleet without tools.browser")

    monkeypatch.setattr("orchestrator.browser.image.ensure_browser_image", no_build)
    launch_options.ensure_fleet_browser_image(fleet.config, Console(quiet=True))

    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(FLEET) + "      browser: {}\n")
    with_browser = load_fleet(tmp_path / "fleet.yaml")
    assert container_hash(with_browser, "plain") != container_hash(fleet, "plain")
    with pytest.raises(AssertionError, match="was built"):
        launch_options.ensure_fleet_browser_image(with_browser.config, Console(quiet=True))


def test_a_browser_call_without_a_docker_engine_says_so(tmp_path: Path) -> None:
    tools = ToolsConfig.model_validate({"http": {"allow": ["https://shop.example/"]}, "browser": {}})
    assert tools.http is not None and tools.browser is not None
    db = Database(tmp_path / "state.db")

    def no_engine() -> object:
        raise BackendUnavailable("no Docker daemon answers at unix:///var/run/docker.sock")

    provider = BrowserTools(
        BrowserContextParts(
            fleet="f",
            agent="scout",
            image="flotilla/browser:none",
            http=tools.http,
            browser=tools.browser,
            sessions=BrowserSessions(db, no_engine),
            secrets=SecretStore({}, tmp_path, {}),
            events=EventBus(db),
            screenshots=ScreenshotShelf(ScreenshotPlace(lambda agent: tmp_path / agent, {})),
        )
    )
    call = OrchestratorToolCall(name="browser_navigate", arguments={"url": "https://shop.example/"})
    result = asyncio.run(provider.call(call))
    assert not result.ok
    assert "no Docker engine answers" in result.output

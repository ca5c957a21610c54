"""web_search against a local fake provider on loopback: the query goes through the agent's egress
policy and budget, the key by handle reaches the provider only, results come back as
title, URL and snippet, and a provider's hostile answer is read safely."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from agent_runtime.protocol import OrchestratorToolCall, OrchestratorToolResult
from orchestrator.config.secrets import SecretSource
from orchestrator.config.tools import ToolsConfig
from orchestrator.egress.budget import sent_today
from orchestrator.events import EventBus
from orchestrator.host_tools.base import HostToolRefused
from orchestrator.secrets import SecretStore
from orchestrator.state.db import Database
from orchestrator.web_search import WEB_SEARCHED, WebSearchTool

KEY = "search-key-5d3a9c71e2"


@dataclass
class FakeProvider:
    server: ThreadingHTTPServer
    asked: list[dict[str, Any]] = field(default_factory=list)
    answer: Any = None

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    fake: FakeProvider

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            fake.asked.append(
                {"path": parts.path, "query": parse_qs(parts.query), "key": self.headers.get("x-api-key")}
            )
            body = json.dumps(fake.answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    fake = FakeProvider(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield fake
    server.shutdown()
    server.server_close()


def searcher(
    tmp_path: Path, provider: FakeProvider, kind: str = "searxng", per_day: int = 10
) -> tuple[WebSearchTool, Database]:
    db = Database(tmp_path / "state.db")
    secrets = SecretStore({"search_key": SecretSource(env="SEARCH_KEY")}, tmp_path, {"SEARCH_KEY": KEY})
    secrets.load_all()
    base = f"http://127.0.0.1:{provider.port}/"
    tools = ToolsConfig.model_validate(
        {
            "http": {"allow": [{"url": base, "allow_private": True}], "requests_per_day": per_day},
            "search": {
                "kind": kind,
                "url": base + "search",
                "headers": {"X-Api-Key": "{{secret:search_key}}"},
                "results": 2,
            },
        }
    )
    assert tools.search is not None and tools.http is not None
    tool = WebSearchTool("scout", tools.search, tools.http, secrets=secrets, events=EventBus(db), db=db)
    return tool, db


def search(tool: WebSearchTool, query: str) -> OrchestratorToolResult:
    return asyncio.run(tool.call(OrchestratorToolCall(name="web_search", arguments={"query": query})))


def test_a_searxng_search_returns_titles_urls_and_snippets(tmp_path: Path, provider: FakeProvider) -> None:
    provider.answer = {
        "results": [
            {
                "title": "Flotilla docs",
                "url": "https://docs.example/flotilla",
                "content": "Fleets  of agents",
            },
            {"title": "No URL"},
            {"title": "Script", "url": "javascript:alert(1)", "content": "x"},
            {"title": "Second", "url": "https://two.example/", "content": f"leaks {KEY}"},
            {"title": "Third", "url": "https://three.example/", "content": "over the count"},
        ]
    }
    tool, db = searcher(tmp_path, provider)
    result = search(tool, "agent fleets")
    assert result.ok, result.output
    assert result.output.splitlines()[:3] == [
        "1. Flotilla docs",
        "   https://docs.example/flotilla",
        "   Fleets of agents",
    ]
    assert (
        "2. Second" in result.output and "Third" not in result.output and "javascript:" not in result.output
    )
    assert KEY not in result.output
    assert provider.asked == [
        {"path": "/search", "query": {"q": ["agent fleets"], "format": ["json"]}, "key": KEY}
    ]
    assert sent_today(db, "scout") == 1
    events = db.query("SELECT data FROM events WHERE type = ?", (WEB_SEARCHED,))
    assert json.loads(events[0]["data"])["results"] == 2


def test_a_brave_style_answer_is_read(tmp_path: Path, provider: FakeProvider) -> None:
    provider.answer = {
        "web": {"results": [{"title": "B", "url": "https://b.example/", "description": "bee"}]}
    }
    tool, _ = searcher(tmp_path, provider, kind="brave")
    result = search(tool, "bees")
    assert result.ok and "https://b.example/" in result.output and "bee" in result.output
    assert provider.asked[0]["query"]["count"] == ["2"]


def test_a_provider_answer_that_is_not_results_is_a_clear_failure(
    tmp_path: Path, provider: FakeProvider
) -> None:
    provider.answer = ["not", "an", "object"]
    tool, _ = searcher(tmp_path, provider)
    result = search(tool, "anything")
    assert not result.ok
    assert "not a JSON object" in result.output


def test_searches_count_against_the_daily_budget(tmp_path: Path, provider: FakeProvider) -> None:
    provider.answer = {"results": []}
    tool, db = searcher(tmp_path, provider, per_day=2)
    assert search(tool, "one").output == "no results for 'one'"
    assert search(tool, "two").ok
    with pytest.raises(HostToolRefused, match=r"requests_per_day"):
        search(tool, "three")
    assert len(provider.asked) == 2 and sent_today(db, "scout") == 2


def test_a_provider_outside_tools_http_is_refused_before_sending(
    tmp_path: Path, provider: FakeProvider
) -> None:
    db = Database(tmp_path / "state.db")
    secrets = SecretStore({}, tmp_path, {})
    tools = ToolsConfig.model_validate(
        {
            "http": {"allow": ["https://api.example/"]},
            "search": {"kind": "json", "url": f"http://127.0.0.1:{provider.port}/search"},
        }
    )
    assert tools.search is not None and tools.http is not None
    tool = WebSearchTool("scout", tools.search, tools.http, secrets=secrets, events=EventBus(db), db=db)
    with pytest.raises(HostToolRefused, match=r"tools\.http\.allow"):
        search(tool, "x")
    assert provider.asked == []

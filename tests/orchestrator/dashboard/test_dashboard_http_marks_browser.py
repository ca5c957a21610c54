"""The requests the orchestrator made (or refused) for an agent, in the agent's transcript on the
dashboard, in a real headless Chromium: where they happened in the turn, with method, URL,
status and the rule of a refusal."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dashboard_browser import ARTIFACTS, WAIT_MS, dashboard

from agent_runtime.protocol import ItemKind
from agent_runtime.workspace.history import HistoryLog, Turn
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

pytestmark = pytest.mark.browser

FLEET = """\
version: 1
fleet: httpmarks
agents:
  alpha:
    role: fetches feeds
    tools:
      http: {allow: ["https://feeds.example.com/"]}
"""
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "http_request", "arguments": '{"url": "https://feeds.example.com/releases.xml"}'},
}


@pytest.fixture
def fetched(tmp_path: Path) -> Iterator[Services]:
    root = tmp_path / "fleet"
    root.mkdir()
    (root / "fleet.yaml").write_text(textwrap.dedent(FLEET))
    services = build_services(load_fleet(root / "fleet.yaml"), FakeBackend())
    assert all(result.ok for result in services.manager.apply())
    item = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "fetch the feed").id
    log = HistoryLog(services.paths.agent_storage("alpha"))
    log.append(Turn(role="user", content="fetch the feed", item_id=item))
    log.append(Turn(role="assistant", content="", tool_calls=(CALL,), item_id=item))
    url = "https://feeds.example.com/releases.xml"
    services.events.publish(
        "http.requested",
        "alpha",
        method="GET",
        url=url,
        host="feeds.example.com",
        status=200,
        bytes=5120,
        duration_s=0.21,
        ok=True,
        detail="",
    )
    services.events.publish(
        "http.refused",
        "alpha",
        method="GET",
        url="https://elsewhere.example/x",
        host="elsewhere.example",
        rule="tools.http.allow: https://elsewhere.example/x matches no allowed URL pattern",
    )
    log.append(
        Turn(role="tool", content="HTTP 200 OK", tool_call_id="call_1", name="http_request", item_id=item)
    )
    yield services
    services.db.close()


def test_requests_show_in_the_transcript(fetched: Services) -> None:
    with dashboard(fetched) as session:
        page = session.page
        page.locator("#fleet-table .agent-link", has_text="alpha").click()
        page.locator('.page-tabs a[data-tab="transcript"]').click()
        marks = page.locator(".transcript .turn .mark-http")
        marks.first.wait_for(timeout=WAIT_MS)
        texts = marks.all_inner_texts()
        assert any(
            "GET https://feeds.example.com/releases.xml → 200" in t and "5120 bytes" in t for t in texts
        )
        assert any("refused: tools.http.allow" in t for t in texts)
        assert "memory flushed" not in page.locator(".transcript").inner_text()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard-http-marks.png"), full_page=True)
    assert session.page_errors == []

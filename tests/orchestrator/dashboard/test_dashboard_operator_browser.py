"""The dashboard's operator views in a real headless Chromium: budgets and what needs attention,
an agent's transcript, a request's trace timeline, the memory browser, per-agent events, the
actions (and their CSRF guard), and the fleet page at phone width. Each view is screenshotted."""

from __future__ import annotations

import asyncio
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Page
from test_dashboard_browser import ARTIFACTS, WAIT_MS, dashboard, populate

from agent_runtime.memory.embeddings import DeterministicEmbedder
from agent_runtime.memory.factlog import FactLog
from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.store import MemoryStore
from agent_runtime.protocol import AskRequest, ItemKind, RunOutcome, RunRecord, WorkResult
from agent_runtime.workspace.history import HistoryLog, Turn
from orchestrator.config.loader import load_fleet
from orchestrator.events import EventType
from orchestrator.scheduler.runs import RunStore
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

pytestmark = pytest.mark.browser

DIMS = 64
FLEET = """\
version: 1
fleet: optest
llm:
  embedding:
    model: test
    dimensions: 64
budget:
  monthly_usd: 50
agents:
  alpha:
    role: researcher
    interface: lookup.md
    budget:
      daily_usd: 0.01
  beta:
    role: writer
    talks_to: [alpha]
"""
LOOKUP = """\
---
operations:
  - name: lookup
    description: Look a term up.
    input:
      type: object
      properties: {term: {type: string}}
      required: [term]
---
I look things up.
"""
CALL = {
    "id": "call_9",
    "type": "function",
    "function": {"name": "memory_save", "arguments": '{"text": "tides"}'},
}


def request_across_agents(services: Services) -> str:
    """The operator writes to beta; working it, beta asks alpha to look a term up. Returns the
    inbox item alpha worked."""
    top = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "what are tides?").id

    async def scenario() -> str:
        claimed = await services.inbox.next("beta", 1)
        assert claimed is not None and claimed.id == top
        ask = services.broker.ask(
            "beta", AskRequest(to="alpha", operation="lookup", input={"term": "tides"}, parent_item=top)
        )

        async def answer() -> str:
            item = await services.inbox.next("alpha", 5)
            assert item is not None
            await asyncio.sleep(0.3)
            services.inbox.complete("alpha", item.id, WorkResult(output={"meaning": "sea levels"}))
            return item.id

        _, worked = await asyncio.gather(ask, answer())
        services.inbox.complete("beta", top, WorkResult(text="Tides are sea levels."))
        return worked

    return asyncio.run(scenario())


def log_turn(services: Services, item: str) -> None:
    """Alpha's transcript of the turn that worked the ask: a tool call, its result, an answer."""
    log = HistoryLog(services.paths.agent_storage("alpha"))
    start = datetime.now(UTC)
    log.append(Turn(role="user", content="lookup tides", item_id=item))
    log.append(Turn(role="assistant", content="", tool_calls=(CALL,), item_id=item))
    log.append(
        Turn(role="tool", content="saved fact 3", tool_call_id="call_9", name="memory_save", item_id=item)
    )
    log.append(Turn(role="assistant", content="Tides are sea levels.", item_id=item))
    services.events.publish(EventType.COMPACTION_DONE, agent="alpha", dropped=6, kept=2)
    RunStore(services.db).add_turn(
        RunRecord(
            id="run-lookup",
            agent="alpha",
            trigger="peer",
            item_id=item,
            model="test",
            started_at=start,
            finished_at=start + timedelta(seconds=1.5),
            tokens_in=120,
            tokens_out=30,
            cost_usd=0.0012,
            outcome=RunOutcome.OK,
        )
    )


def seed_memory(services: Services) -> None:
    storage = services.paths.agent_storage("alpha")
    store = MemoryStore(
        storage / "memory.db",
        embedder=DeterministicEmbedder(DIMS),
        config=MemoryConfig(dimensions=DIMS, embedding_model="test"),
        fact_log=FactLog(storage / "workspace"),
    )
    store.save(
        "The user's locker code is 4512", category="personal", source="user_stated", subject="user.locker"
    )
    store.save(
        "The user's locker code is 9981", category="personal", source="inferred", subject="user.locker"
    )
    store.save("The user prefers window seats", category="travel", source="agent")
    store.save("The release ships on Friday", category="work", source="inferred")
    store.save("The user's city is Porto", category="places", source="user_stated", scope="person:team:111")
    store.close()


@pytest.fixture
def operated(tmp_path: Path) -> Iterator[Services]:
    root = tmp_path / "fleet"
    root.mkdir()
    (root / "lookup.md").write_text(LOOKUP)
    (root / "fleet.yaml").write_text(textwrap.dedent(FLEET))
    services = build_services(load_fleet(root / "fleet.yaml"), FakeBackend())
    assert all(result.ok for result in services.manager.apply())
    worked = request_across_agents(services)
    log_turn(services, worked)
    populate(services)
    seed_memory(services)
    for _ in range(3):
        services.events.publish(EventType.AGENT_RESTARTED, agent="beta", reason="exited")
    yield services
    services.db.close()


def shot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def test_operator_views(operated: Services) -> None:
    services = operated
    with dashboard(services) as session:
        page = session.page
        check_budgets_and_attention(page)
        shot(page, "dashboard-budgets.png")
        check_transcript(page)
        shot(page, "dashboard-transcript.png")
        check_trace(page)
        shot(page, "dashboard-trace.png")
        check_memory(page)
        shot(page, "dashboard-memory.png")
        check_events(page)
        shot(page, "dashboard-events.png")
        check_actions(page, services)
        shot(page, "dashboard-actions.png")
        check_cross_site_refused(page, session.url)
    assert session.page_errors == []


def check_budgets_and_attention(page: Page) -> None:
    attention = page.locator(".attention li")
    attention.first.wait_for(timeout=WAIT_MS)
    texts = sorted(attention.all_inner_texts())
    assert "alpha" in texts[0] and "budget spent" in texts[0]
    assert "beta" in texts[1] and "crash loop" in texts[1]
    tile = page.locator(".tile", has_text="need attention")
    assert tile.locator(".tile-value").inner_text() == "2"
    gauges = page.locator("#fleet-budgets .gauge")
    gauges.first.wait_for(timeout=WAIT_MS)
    alpha = page.locator('#fleet-budgets .gauge[data-agent="alpha"]')
    assert "gauge-bad" in (alpha.get_attribute("class") or "")
    assert "of $0.01" in alpha.inner_text() and "resets" in alpha.inner_text()
    assert "monthly spend" in page.locator('#fleet-budgets .gauge[data-agent="fleet"]').inner_text()


def check_transcript(page: Page) -> None:
    page.locator("#fleet-table .agent-link", has_text="alpha").click()
    page.locator('.page-tabs a[data-tab="transcript"]').click()
    turn = page.locator(".transcript .turn").first
    turn.wait_for(timeout=WAIT_MS)
    text = turn.inner_text()
    assert "120 → 30 tok" in text and "1.5 s" in text and "peer" in text
    assert "memory_save" in text and '{"text": "tides"}' in text
    assert "result of memory_save" in text.lower() and "saved fact 3" in text
    assert "context compacted" in text


def check_trace(page: Page) -> None:
    page.locator(".transcript .turn .id-link").first.click()
    steps = page.locator(".trace-step")
    steps.first.wait_for(timeout=WAIT_MS)
    assert steps.count() == 2
    assert "operator message" in steps.nth(0).inner_text() and "done" in steps.nth(0).inner_text()
    assert "lookup" in steps.nth(1).inner_text() and "answered" in steps.nth(1).inner_text()
    assert page.locator(".trace-step .bar-work").count() == 2
    widths = page.locator(".trace-step .bar").evaluate_all(
        "bars => bars.map(b => b.getBoundingClientRect().width)"
    )
    assert all(width > 0 for width in widths)
    assert "operator → alpha" not in page.locator(".timeline p").first.inner_text()
    assert "operator → beta → alpha" in page.locator(".timeline p").first.inner_text()


def check_memory(page: Page) -> None:
    page.goto(page.url.split("#")[0] + "#/agent/alpha/memory")
    rows = page.locator(".fact-list tbody tr")
    rows.first.wait_for(timeout=WAIT_MS)
    assert rows.count() == 4
    # A person's scope, shown and filtered on.
    assert "person:team:111" in page.locator(".fact-list tbody tr", has_text="Porto").inner_text()
    page.locator('input[name="scope"]').fill("shared")
    page.locator("button", has_text="Filter").click()
    page.locator(".fact-list tbody tr", has_text="Porto").wait_for(state="detached", timeout=WAIT_MS)
    page.locator(".fact-list tbody tr", has_text="Friday").wait_for(timeout=WAIT_MS)
    assert page.locator(".fact-list tbody tr").count() == 3
    page.locator('input[name="scope"]').fill("")
    page.locator('select[name="source"]').select_option("inferred")
    page.locator(".fact-list tbody tr", has_text="window seats").wait_for(state="detached", timeout=WAIT_MS)
    page.locator(".fact-list tbody tr", has_text="Friday").wait_for(timeout=WAIT_MS)
    assert page.locator(".fact-list tbody tr").count() == 1
    # Edit: the correction is a new version by the operator.
    page.locator(".fact-list tbody tr", has_text="Friday").locator("button", has_text="Edit").click()
    page.locator(".fact-editor").fill("The release ships on Monday")
    page.locator("button", has_text="Save fact").click()
    page.locator('select[name="source"]').select_option("operator")
    page.locator(".fact-list tbody tr", has_text="Monday").wait_for(timeout=WAIT_MS)
    # Forget takes a second click.
    page.locator('select[name="source"]').select_option("")
    forget = page.locator(".fact-list tbody tr", has_text="window seats").locator("button", has_text="Forget")
    forget.click()
    page.locator("button", has_text="Confirm forget").click()
    page.locator(".fact-list tbody tr", has_text="window seats").wait_for(state="detached", timeout=WAIT_MS)
    # Settle the contradiction: the new claim replaces the stored fact.
    pending = page.locator(".contradiction-items li")
    pending.first.wait_for(timeout=WAIT_MS)
    assert "4512" in pending.first.inner_text() and "9981" in pending.first.inner_text()
    page.locator(".fact-list tbody tr").first.wait_for(timeout=WAIT_MS)
    shot(page, "dashboard-memory-contradiction.png")
    pending.first.locator("button", has_text="Take new").click()
    page.get_by_text("No contradictions waiting.").wait_for(timeout=WAIT_MS)
    page.locator(".fact-list tbody tr", has_text="9981").wait_for(timeout=WAIT_MS)


def check_events(page: Page) -> None:
    page.locator('.page-tabs a[data-tab="events"]').click()
    rows = page.locator(".tab-body tbody tr")
    # The tab fills in as the page reads the events: wait for the row, not just for a first one.
    rows.filter(has_text="compaction.done").first.wait_for(timeout=WAIT_MS)
    assert all("heartbeat.idle" not in text for text in rows.all_inner_texts())  # beta's event
    # The side feed shows alpha's events only while on alpha's page.
    visible = page.locator("#feed li.event:visible")
    assert visible.count() >= 1
    assert set(visible.evaluate_all("items => items.map(i => i.dataset.agent)")) == {"alpha"}


def check_actions(page: Page, services: Services) -> None:
    page.locator(".message-text").fill("Please check the tide tables")
    page.locator(".send-form button", has_text="Send").click()
    page.locator(".action-status .id-link").wait_for(timeout=WAIT_MS)
    queued = page.locator(".action-status .id-link").inner_text()
    page.locator('.page-tabs a[data-tab="overview"]').click()
    page.locator(".tab-body .id-link", has_text=queued).wait_for(
        timeout=WAIT_MS
    )  # in the inbox, linked to its trace
    texts = [item.text for item in services.inbox.list("alpha")]
    assert "Please check the tide tables" in texts
    page.locator('button[data-action="run-heartbeat"]').click()
    page.locator(".action-status", has_text="Heartbeat:").wait_for(timeout=WAIT_MS)
    page.locator('button[data-action="pause"]').click()
    page.locator(".action-status", has_text="paus").wait_for(timeout=WAIT_MS)
    page.locator('button[data-action="resume"]').click()
    page.locator(".action-status", has_text="resum").wait_for(timeout=WAIT_MS)
    page.locator('button[data-action="restart"]').click()
    page.locator(".action-status", has_text="restart").wait_for(timeout=WAIT_MS)


def check_cross_site_refused(page: Page, url: str) -> None:
    """The page's own cookie without the dashboard's header, as a cross-site form would send it."""
    status = page.evaluate(
        """async () => (await fetch('/api/v1/agents/alpha/pause', {method: 'POST', credentials: 'same-origin'})).status"""
    )
    assert status == 403


def test_fleet_page_at_phone_width(operated: Services) -> None:
    with dashboard(operated) as session:
        page = session.page
        page.set_viewport_size({"width": 390, "height": 844})
        page.locator("#fleet-table tbody tr").first.wait_for(timeout=WAIT_MS)
        page.locator("#fleet-budgets .gauge").first.wait_for(timeout=WAIT_MS)
        headers = page.locator("#fleet-table th:visible").all_inner_texts()
        assert "Health" in headers and "State" in headers and "Role" not in headers
        shot(page, "dashboard-390.png")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        assert page.locator("#fleet-table .table-wrap").evaluate("w => w.scrollWidth <= w.clientWidth")
        tiles = page.locator(".tile").evaluate_all("ts => ts.map(t => t.getBoundingClientRect().right)")
        assert max(tiles) <= 390
        page.locator("#fleet-table .agent-link", has_text="alpha").click()
        page.locator(".actions").wait_for(timeout=WAIT_MS)
        page.locator("#agent-budgets .gauge").first.wait_for(timeout=WAIT_MS)
        assert "budget spent" in page.locator(".attention").inner_text()
        tabs = page.locator(".page-tabs a").evaluate_all("ts => ts.map(t => t.getBoundingClientRect().top)")
        assert len(set(tabs)) == 1  # the four tabs on one line
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        shot(page, "dashboard-agent-390.png")
    assert session.page_errors == []

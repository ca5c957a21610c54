"""The dashboard in a real headless Chromium: it loads, lists the fleet, and updates live."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_runtime.protocol import CheckIn, ItemKind, RunOutcome, RunRecord
from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.errors import Unavailable
from orchestrator.events import EventType
from orchestrator.gateway.ledger import Charge, Ledger
from orchestrator.services import Services
from orchestrator.testing.agent_link import connect_agent
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
WAIT_MS = 20_000

pytestmark = pytest.mark.browser

if not shutil.which(CHROMIUM) and not os.environ.get("CI"):
    pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)", allow_module_level=True)

from playwright.sync_api import Page, Route, sync_playwright  # noqa: E402


def charge(services: Services, agent: str, hours_ago: float, cost: float) -> None:
    with services.db.transaction() as conn:
        row = Ledger.reserve(
            conn,
            at=datetime.now(UTC) - timedelta(hours=hours_ago),
            agent=agent,
            kind="chat",
            model="test",
            provider="test",
            estimate=Charge(tokens_in=1000, tokens_out=200, cost_usd=cost),
        )
    Ledger(services.db).settle(
        row,
        model="test",
        provider="test",
        charge=Charge(tokens_in=1000, tokens_out=200, cost_usd=cost),
        status="ok",
        latency_ms=80,
    )


def populate(services: Services) -> None:
    """A fleet that has been at work for a day: spend, runs, a queue, check-ins, learnings."""
    spend = [(20, 0.04, 0.01), (14, 0.09, 0.0), (7, 0.02, 0.05), (2, 0.12, 0.03), (0, 0.05, 0.02)]
    for hours, alpha_cost, beta_cost in spend:
        charge(services, "alpha", hours, alpha_cost)
        if beta_cost:
            charge(services, "beta", hours, beta_cost)
    now = datetime.now(UTC)
    for index, outcome in enumerate([RunOutcome.OK, RunOutcome.OK, RunOutcome.ERROR]):
        services.scheduler.record_turn(
            RunRecord(
                id=f"run-{index}",
                agent="alpha",
                trigger="operator",
                model="test",
                started_at=now - timedelta(minutes=30 - index),
                finished_at=now - timedelta(minutes=29 - index),
                tokens_in=1200,
                tokens_out=300,
                cost_usd=0.01,
                outcome=outcome,
                detail="summarised the weekly report" if outcome is RunOutcome.OK else "tool timed out",
            )
        )
    services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "Draft the release notes")
    services.inbox.submit("alpha", ItemKind.PEER_TELL, "beta", "The outline is ready")
    for agent, rss in (("alpha", 96 * 1024 * 1024), ("beta", 71 * 1024 * 1024)):
        services.health.record(agent, CheckIn(state="idle", pid=1, uptime_s=3600, rss_bytes=rss, turns=3))
    # Learnings are in the agent's own storage; the dashboard asks the agent for them.
    learnings = services.paths.agent_storage("alpha") / "workspace" / "learnings"
    learnings.mkdir(parents=True, exist_ok=True)
    (learnings / "2026-01-01.md").write_text("- Cite the source of every figure.\n")
    services.events.publish(EventType.AGENT_STARTED, agent="alpha", unit="fake-1-alpha")
    services.events.publish(EventType.HEARTBEAT_IDLE, agent="beta", reason="nothing to do")


@pytest.fixture
def fleet_services(fleet_file: Path) -> Iterator[Services]:
    services = build_services(load_fleet(fleet_file), FakeBackend())
    results = services.manager.apply()
    assert all(result.ok for result in results)
    populate(services)
    yield services
    services.db.close()


@dataclass
class Session:
    page: Page
    url: str
    page_errors: list[str]


@contextmanager
def dashboard(services: Services) -> Iterator[Session]:
    """Chromium on the served dashboard; every request leaving loopback is refused and recorded."""
    foreign: list[str] = []

    def only_loopback(route: Route) -> None:
        host = urlsplit(route.request.url).hostname or ""
        if route.request.url.startswith("data:") or host == "127.0.0.1":
            route.continue_()
        else:
            foreign.append(route.request.url)
            route.abort()

    with (
        serve_app(create_app(services)) as url,
        connect_agent(services, url, "alpha"),
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            session = Session(page, url, [])
            page.on("pageerror", lambda error: session.page_errors.append(str(error)))
            page.route("**/*", only_loopback)
            page.goto(f"{url}/?token={services.operator_token}")
            yield session
        finally:
            browser.close()
    assert foreign == []


def test_dashboard_lists_the_fleet_and_updates_live(fleet_services: Services) -> None:
    services = fleet_services
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with dashboard(services) as session:
        page = session.page
        # The token was swapped for a cookie and removed from the address bar.
        assert page.url == f"{session.url}/"
        check_fleet_overview(page, services)
        check_live_update(page, services)
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)

        check_agent_page(page, services)
        page.screenshot(path=str(ARTIFACTS / "dashboard-agent.png"), full_page=True)
    assert session.page_errors == []


def test_a_paused_agent_shows_as_paused_not_running(fleet_services: Services) -> None:
    fleet_services.controls.set("beta", "paused")
    with dashboard(fleet_services) as session:
        rows = session.page.locator("#fleet-table tbody tr")
        rows.first.wait_for(timeout=WAIT_MS)
        assert "running" in rows.nth(0).inner_text()
        beta = rows.nth(1).inner_text()
        assert "paused" in beta and "running" not in beta
    assert session.page_errors == []


class Missing:
    """A part that does not answer: every use of it is refused as unavailable (503)."""

    def __init__(self, part: str) -> None:
        self._part = part

    def __getattr__(self, name: str) -> Any:
        raise Unavailable("unavailable", f"the {self._part} is not running in this orchestrator")

    async def aclose(self) -> None:
        """Nothing to close."""


def test_missing_data_sources_show_unavailable(services: Services) -> None:
    """Only the event bus, tokens and workspaces: no gateway, scheduler or fleet manager."""
    without = replace(
        services,
        gateway=Missing("LLM gateway"),
        scheduler=Missing("scheduler"),
        manager=Missing("fleet manager"),
    )
    with dashboard(without) as session:
        page = session.page
        page.get_by_text("Fleet status unavailable").wait_for(timeout=WAIT_MS)
        assert page.locator("#fleet-table .agent-link").all_inner_texts() == ["alpha", "beta"]
        page.get_by_text("Usage data unavailable").wait_for(timeout=WAIT_MS)
        event = services.events.publish(EventType.AGENT_REPORTED, agent="beta", note="still alive")
        page.locator(f'#feed li[data-seq="{event.seq}"]').wait_for(timeout=WAIT_MS)
        page.locator("#fleet-table .agent-link", has_text="beta").click()
        page.get_by_text("Runs unavailable").wait_for(timeout=WAIT_MS)
        page.locator("button.link", has_text="SOUL.md").wait_for(timeout=WAIT_MS)
    assert session.page_errors == []


def check_fleet_overview(page: Page, services: Services) -> None:
    rows = page.locator("#fleet-table tbody tr")
    rows.first.wait_for(timeout=WAIT_MS)
    assert rows.count() == 2
    names = page.locator("#fleet-table .agent-link").all_inner_texts()
    assert names == ["alpha", "beta"]
    first = rows.nth(0).inner_text()
    assert "running" in first and "healthy" in first and "96.0 MiB" in first
    assert page.locator("#fleet-name").inner_text() == "optest"
    page.locator(".chart rect").first.wait_for(timeout=WAIT_MS)
    assert page.locator(".chart rect").count() >= 6
    assert "Total $0.43" in page.locator(".chart-figure figcaption").inner_text()
    page.locator('#live-status[data-state="live"]').wait_for(timeout=WAIT_MS)
    stored = services.events.recent(limit=50)
    assert page.locator("#feed li.event").count() == len(stored)
    assert page.locator("#feed li.event").first.get_attribute("data-seq") == str(stored[-1].seq)


def check_live_update(page: Page, services: Services) -> None:
    event = services.events.publish(
        EventType.BUDGET_WARNING, agent="alpha", scope="agent", kind="daily_usd", fraction=0.82
    )
    item = page.locator(f'#feed li[data-seq="{event.seq}"]')
    item.wait_for(timeout=WAIT_MS)
    assert "budget.warning" in item.inner_text()
    assert "fraction=0.82" in item.inner_text()
    # The newest event is on top.
    assert page.locator("#feed li.event").first.get_attribute("data-seq") == str(event.seq)


def check_agent_page(page: Page, services: Services) -> None:
    page.locator("#fleet-table .agent-link", has_text="alpha").click()
    page.locator(".agent-head h1", has_text="alpha").wait_for(timeout=WAIT_MS)
    soul = page.locator("tr", has=page.locator("button", has_text="SOUL.md"))
    soul.wait_for(timeout=WAIT_MS)
    assert "%" in soul.inner_text()
    page.locator("text=summarised the weekly report").first.wait_for(timeout=WAIT_MS)
    page.locator("text=Draft the release notes").wait_for(timeout=WAIT_MS)
    page.locator("button", has_text="2026-01-01.md").click()
    page.locator("text=Cite the source of every figure.").wait_for(timeout=WAIT_MS)

    # Memory search answers with hits, no match, or "unavailable" when that service is absent.
    page.locator(".search input").fill("release")
    page.locator(".search button").click()
    page.locator(".memory-results").get_by_text(re.compile("unavailable|No matches|score")).wait_for(
        timeout=WAIT_MS
    )

    # A direct look at one file, then an edit refused for its size, from the page itself.
    page.locator("button.link", has_text="MEMORY.md").click()
    page.locator(".tabs button", has_text="Edit").click()
    editor = page.locator("textarea.editor")
    editor.wait_for(timeout=WAIT_MS)
    editor.fill("x" * 20_000)
    page.locator("button.primary", has_text="Save").click()
    page.locator(".error-text").wait_for(timeout=WAIT_MS)
    assert "cap" in page.locator(".error-text").inner_text()
    editor.fill("# Memory\n- The release is on Friday.\n")
    page.locator("button.primary", has_text="Save").click()
    page.locator(".ok-text").wait_for(timeout=WAIT_MS)
    assert (
        services.paths.workspace("alpha") / "MEMORY.md"
    ).read_text() == "# Memory\n- The release is on Friday.\n"

    # A workspace change elsewhere shows up in the feed while on this page.
    event = services.events.publish(
        EventType.WORKSPACE_CHANGED, agent="alpha", file="SOUL.md", author="agent"
    )
    page.locator(f'#feed li[data-seq="{event.seq}"]').wait_for(timeout=WAIT_MS)
    page.locator(".tabs button", has_text="History").click()
    page.locator(".file-panel td", has_text="operator").first.wait_for(timeout=WAIT_MS)

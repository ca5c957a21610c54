"""The dashboard's send box shows the reply as the agent streams it, and what holds it up; the
spend chart's ticks show their values exactly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dashboard_browser import WAIT_MS, charge, dashboard

from agent_runtime.protocol import WorkResult
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.cli import wait_for
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

pytestmark = pytest.mark.browser


@pytest.fixture
def services(fleet_file: Path) -> Iterator[Services]:
    built = build_services(load_fleet(fleet_file), FakeBackend())
    assert all(result.ok for result in built.manager.apply())
    yield built
    built.db.close()


def test_the_reply_shows_as_it_streams(services: Services) -> None:
    with dashboard(services) as session:
        page = session.page
        page.goto(f"{session.url}/#/agent/alpha")
        page.locator(".message-text").fill("How are the tides?")
        page.locator(".send-form button", has_text="Send").click()
        page.locator(".action-status .id-link").wait_for(timeout=WAIT_MS)  # queued, linked to its trace
        wait_for(
            lambda: any(i.text == "How are the tides?" for i in services.inbox.list("alpha")), "the item"
        )
        (item,) = [i for i in services.inbox.list("alpha") if i.text == "How are the tides?"]
        services.inbox.add_progress(item.id, "The tides ")
        page.locator(".reply", has_text="The tides").wait_for(timeout=WAIT_MS)  # before the answer is done
        services.controls.set("alpha", "paused")
        page.locator(".action-status", has_text="alpha' is paused").wait_for(timeout=WAIT_MS)
        services.controls.set("alpha", None)
        services.inbox.add_progress(item.id, "are high.")
        assert services.inbox.complete("alpha", item.id, WorkResult(ok=True, text="The tides are high."))
        page.locator(".action-status", has_text="Answered").wait_for(timeout=WAIT_MS)
        assert page.locator(".reply").inner_text() == "The tides are high."
    assert session.page_errors == []


def test_chart_ticks_show_their_values_exactly(services: Services) -> None:
    charge(services, "alpha", 1, 0.09)  # the axis tops at $0.10: ticks every $0.025
    with dashboard(services) as session:
        ticks = session.page.locator(".chart .tick")
        ticks.first.wait_for(timeout=WAIT_MS)
        texts = ticks.evaluate_all("ts => ts.map(t => t.textContent)")
        assert {"$0.025", "$0.05", "$0.075", "$0.1"} <= set(texts), texts
    assert session.page_errors == []

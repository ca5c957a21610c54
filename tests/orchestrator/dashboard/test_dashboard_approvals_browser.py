"""The dashboard's approvals panel in a real headless Chromium: the pending tool calls with agent,
tool, arguments and age; one approved and one denied with the page's buttons (through the
CSRF-guarded API); one decided elsewhere leaving the list on its own."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dashboard_browser import ARTIFACTS, WAIT_MS, dashboard

from agent_runtime.protocol import ApprovalItem, ApprovalRequest
from orchestrator.approvals import ApprovalStore
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

pytestmark = pytest.mark.browser

FLEET = """\
version: 1
fleet: approvals
agents:
  alpha:
    role: writes files
    tools:
      rules:
        write_file: {approval: required}
  beta:
    role: searches
    tools:
      rules:
        write_file: {approval: required}
"""


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(FLEET))
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    assert all(result.ok for result in built.manager.apply())
    yield built
    built.db.close()


def ask(store: ApprovalStore, agent: str, path: str) -> ApprovalItem:
    request = ApprovalRequest(
        key=f"approval-{agent}-{path}",
        tool="write_file",
        arguments={"path": path, "content": "tide tables"},
        item_id=f"item-{path}",
        timeout_s=600,
    )
    return store.request(agent, request)


def test_pending_calls_are_approved_and_denied_from_the_dashboard(services: Services) -> None:
    store = ApprovalStore(services.db, services.events)
    first = ask(store, "alpha", "notes.md")
    second = ask(store, "beta", "secrets.md")
    third = ask(store, "alpha", "later.md")
    with dashboard(services) as session:
        page = session.page
        rows = page.locator("#approvals tr.approval")
        rows.first.wait_for(timeout=WAIT_MS)
        assert rows.count() == 3
        text = page.locator(f'#approvals tr[data-approval="{first.id}"]').inner_text()
        assert "alpha" in text and "write_file" in text and '"path":"notes.md"' in text
        age = re.search(r"\t(\d+)s\t", text)  # its age, counted from its request
        assert age is not None and int(age.group(1)) < 120, text
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard-approvals.png"), full_page=True)

        page.locator(f'#approvals tr[data-approval="{first.id}"] button[data-decide="approve"]').click()
        page.locator(f'#approvals tr[data-approval="{first.id}"]').wait_for(state="detached", timeout=WAIT_MS)
        assert store.get(first.id).state == "approved"
        page.locator(".approval-decided", has_text="write_file of alpha: approved").wait_for(timeout=WAIT_MS)

        denied = page.locator(f'#approvals tr[data-approval="{second.id}"]')
        denied.locator(".approval-reason").fill("not that file")
        denied.locator('button[data-decide="deny"]').click()
        page.locator(f'#approvals tr[data-approval="{second.id}"]').wait_for(
            state="detached", timeout=WAIT_MS
        )
        decided = store.get(second.id)
        assert decided.state == "denied" and decided.reason == "not that file"

        store.decide(third.id, "denied", "decided on the command line")  # elsewhere: the event refreshes
        page.get_by_text("No tool call waits for approval.").wait_for(timeout=WAIT_MS)
    assert session.page_errors == []


def test_approve_and_deny_are_on_screen_at_phone_width(services: Services) -> None:
    store = ApprovalStore(services.db, services.events)
    item = ask(store, "alpha", "a-rather-long-folder-name/with-a-long-file-name-inside-it.md")
    with dashboard(services) as session:
        page = session.page
        page.set_viewport_size({"width": 390, "height": 844})
        row = page.locator(f'#approvals tr[data-approval="{item.id}"]')
        row.wait_for(timeout=WAIT_MS)
        for verb in ("approve", "deny"):
            box = row.locator(f'button[data-decide="{verb}"]').bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (verb, box)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=str(ARTIFACTS / "dashboard-approvals-390.png"), full_page=True)
        row.locator('button[data-decide="approve"]').click()
        row.wait_for(state="detached", timeout=WAIT_MS)
        assert store.get(item.id).state == "approved"
    assert session.page_errors == []


def test_a_decision_without_the_dashboard_header_is_refused(services: Services) -> None:
    item = ask(ApprovalStore(services.db, services.events), "alpha", "forged.md")
    with dashboard(services) as session:
        page = session.page
        page.locator("#approvals tr.approval").first.wait_for(timeout=WAIT_MS)
        status = page.evaluate(
            "async (id) => (await fetch(`/api/v1/approvals/${id}/approve`, "
            "{method: 'POST', credentials: 'same-origin'})).status",
            item.id,
        )
        assert status == 403
    assert ApprovalStore(services.db, services.events).get(item.id).state == "pending"

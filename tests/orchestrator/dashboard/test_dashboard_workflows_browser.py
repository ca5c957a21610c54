"""The dashboard's workflow runs in a real headless Chromium: each run drawn as its graph of steps
with their states, cancelled and retried with the page's buttons (through the CSRF-guarded API)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dashboard_browser import ARTIFACTS, WAIT_MS, dashboard

from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

pytestmark = pytest.mark.browser

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "workflow"


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    shutil.copytree(EXAMPLE / "interfaces", tmp_path / "interfaces")
    text = (EXAMPLE / "fleet.yaml").read_text()
    (tmp_path / "fleet.yaml").write_text(
        text.replace("agents:\n", "agents:\n  alpha:\n    role: watches\n", 1)
    )
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    assert all(result.ok for result in built.manager.apply())
    yield built
    built.db.close()


def test_runs_are_drawn_as_graphs_and_cancelled_and_retried(services: Services) -> None:
    run = services.workflows.start("digest", {"topic": "tides"})
    with dashboard(services) as session:
        page = session.page
        graph = page.locator(f'#workflows .workflow-graph[data-run="{run.id}"]')
        graph.wait_for(timeout=WAIT_MS)
        steps = [
            graph.locator(f'[data-step="{name}"]').inner_text() for name in ("find_facts", "review", "draft")
        ]
        assert [text.split()[-1] for text in steps] == ["queued", "pending", "pending"]
        assert graph.locator(".workflow-column").count() == 3  # one column per depth of depends_on
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard-workflows.png"), full_page=True)

        page.locator(f'#workflows tr:has([data-run="{run.id}"]) button[data-act="cancel"]').click()
        page.locator(f'#workflows tr:has([data-run="{run.id}"]) button[data-act="retry"]').wait_for(
            timeout=WAIT_MS
        )
        assert services.workflows.store.get(run.id).state == "cancelled"  # type: ignore[union-attr]
        page.locator(f'#workflows tr:has([data-run="{run.id}"]) button[data-act="retry"]').click()
        page.locator(f'#workflows tr:has([data-run="{run.id}"]) button[data-act="cancel"]').wait_for(
            timeout=WAIT_MS
        )
        assert services.workflows.store.get(run.id).state == "running"  # type: ignore[union-attr]
        assert session.page_errors == []

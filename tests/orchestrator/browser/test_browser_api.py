"""The browser tools through the agent API, as an agent calls them: offered only to an agent with
tools.browser, approvable per tool, their screenshots served to the operator alone, their
sandboxes closed when the orchestrator stops."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.api.app import create_app
from orchestrator.browser.sandbox import LABEL_BROWSER_FLEET
from orchestrator.config.loader import load_fleet
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services
from tests.orchestrator.browser.pages import JS_PAGE, LocalSite

pytestmark = pytest.mark.docker


def test_an_agent_browses_through_the_api_under_its_rules(
    tmp_path: Path, browser_image_tag: str, site: LocalSite, docker_client: Any
) -> None:
    site.pages["/js"] = JS_PAGE
    (tmp_path / "fleet.yaml").write_text(
        "version: 1\nfleet: flt-test-browser-api\nagents:\n"
        "  scout:\n    role: browses\n    tools:\n"
        f'      http: {{allow: ["{site.url("/")}"], allow_private: true}}\n'
        "      browser: {}\n"
        "      rules: {browser_click: {approval: required}}\n"
        "  plain:\n    role: no browser\n"
        f'    tools: {{http: {{allow: ["{site.url("/")}"], allow_private: true}}}}\n'
    )
    services = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    services.manager.apply()
    scout = {"authorization": f"Bearer {services.tokens.mint('scout')}"}
    plain = {"authorization": f"Bearer {services.tokens.mint('plain')}"}
    with serve_app(create_app(services)) as base, httpx.Client(base_url=base, timeout=120) as client:
        plain_tools = [tool["name"] for tool in client.get("/agent/v1/tools", headers=plain).json()["tools"]]
        assert not [name for name in plain_tools if name.startswith("browser_")]
        refused = client.post(
            "/agent/v1/tools/call",
            headers=plain,
            json={"name": "browser_navigate", "arguments": {"url": site.url("/js")}},
        )
        assert refused.status_code == 403
        assert services.browsers is None  # no session, no proxy, no Playwright for an agent without a browser

        offered = [tool["name"] for tool in client.get("/agent/v1/tools", headers=scout).json()["tools"]]
        assert {"browser_navigate", "browser_snapshot", "browser_click", "browser_type"} <= set(offered)
        assert "browser_evaluate" not in offered
        call = {"name": "browser_navigate", "arguments": {"url": site.url("/js")}, "item_id": "item-7"}
        answer = client.post("/agent/v1/tools/call", headers=scout, json=call)
        assert answer.status_code == 200, answer.text
        assert "rendered by script 42" in answer.json()["output"]
        click = {"name": "browser_click", "arguments": {"ref": "e1"}, "item_id": "item-7"}
        unapproved = client.post("/agent/v1/tools/call", headers=scout, json=click)
        assert unapproved.status_code == 403
        assert "approval" in unapproved.json()["message"]
        assert services.browsers is not None and services.browsers.open_count("scout") == 1

        shot = {"name": "browser_screenshot", "arguments": {}, "item_id": "item-7"}
        taken = client.post("/agent/v1/tools/call", headers=scout, json=shot)
        assert taken.status_code == 200, taken.text
        assert taken.json()["output"].startswith("screenshot saved as screenshots/item-7.png version 1 ")
        name = "item-7.png"
        operator = {"authorization": f"Bearer {services.operator_token}"}
        png = client.get(f"/api/v1/agents/scout/screenshots/{name}", headers=operator)
        assert png.status_code == 200 and png.headers["content-type"] == "image/png"
        assert png.content.startswith(b"\x89PNG")
        assert client.get(f"/api/v1/agents/scout/screenshots/{name}", headers=scout).status_code == 403
        for wrong in ("item-7..%2F..%2Fstate.db", "state.db", "item-8.png", "item-7.png?version=2"):
            assert (
                client.get(f"/api/v1/agents/scout/screenshots/{wrong}", headers=operator).status_code == 404
            )
        assert client.get(f"/api/v1/agents/plain/screenshots/{name}", headers=operator).status_code == 404
    left = docker_client.api.containers(
        all=True, filters={"label": f"{LABEL_BROWSER_FLEET}=flt-test-browser-api"}
    )
    assert left == []
    services.db.close()

"""Agent routes over real HTTP: config, check-ins, the inbox long-poll, progress and done."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_runtime.protocol import CheckIn, ItemKind, WorkResult
from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

FLEET = (
    "version: 1\nfleet: routes\nagents:\n  alpha:\n    role: a\n    talks_to: [beta]\n  beta:\n    role: b\n"
)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    built = build_services(load_fleet(tmp_path / "fleet.yaml"), FakeBackend())
    yield built
    built.db.close()


@pytest.fixture
def base_url(services: Services) -> Iterator[str]:
    with serve_app(create_app(services)) as url:
        yield url


def agent_client(services: Services, base_url: str, agent: str) -> httpx.Client:
    token = services.tokens.mint(agent)
    return httpx.Client(base_url=base_url, headers={"authorization": f"Bearer {token}"}, timeout=10)


def test_config_is_served_to_the_agent_and_holds_no_secret(services: Services, base_url: str) -> None:
    with agent_client(services, base_url, "alpha") as client:
        config = client.get("/agent/v1/config").json()
    assert config["agent"] == "alpha" and config["talks_to"] == ["beta"]
    assert config["config_hash"] == services.fleet.agent_hash("alpha")
    assert not any("key" in name.lower() for name in config)


def test_routes_refuse_missing_and_operator_tokens(services: Services, base_url: str) -> None:
    assert httpx.get(f"{base_url}/agent/v1/config").status_code == 401
    operator = {"authorization": f"Bearer {services.operator_token}"}
    response = httpx.get(f"{base_url}/agent/v1/config", headers=operator)
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"


def test_long_poll_delivers_progress_and_result(services: Services, base_url: str) -> None:
    with agent_client(services, base_url, "beta") as client:
        assert client.get("/agent/v1/inbox/next", params={"wait": 0}).status_code == 204
        item = services.inbox.put("beta", ItemKind.OPERATOR_MESSAGE, "operator", "hi")
        claimed = client.get("/agent/v1/inbox/next", params={"wait": 1}).json()
        assert claimed["id"] == item.id and claimed["attempt"] == 1
        assert client.post(f"/agent/v1/inbox/{item.id}/progress", json={"delta": "he"}).status_code == 204
        done = client.post(f"/agent/v1/inbox/{item.id}/done", json={"ok": True, "text": "hello"})
        assert done.status_code == 204
    assert services.inbox.result(item.id) == WorkResult(ok=True, text="hello")


def test_an_agent_cannot_touch_another_agents_item(services: Services, base_url: str) -> None:
    item = services.inbox.put("beta", ItemKind.OPERATOR_MESSAGE, "operator", "for beta")
    with agent_client(services, base_url, "alpha") as client:
        response = client.post(f"/agent/v1/inbox/{item.id}/done", json={"ok": True, "text": "stolen"})
    assert response.status_code == 404
    assert services.inbox.state(item.id) == "queued"


def test_a_poll_whose_client_went_away_does_not_swallow_an_item(services: Services, base_url: str) -> None:
    token = services.tokens.mint("beta")
    headers = {"authorization": f"Bearer {token}"}

    def abandoned_poll() -> None:
        # The client gives up after 0.3 s while the server would wait 5 s.
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(f"{base_url}/agent/v1/inbox/next", params={"wait": 5}, headers=headers, timeout=0.3)

    poller = threading.Thread(target=abandoned_poll)
    poller.start()
    poller.join()
    time.sleep(0.3)
    item = services.inbox.put("beta", ItemKind.OPERATOR_MESSAGE, "operator", "still there?")
    with httpx.Client(base_url=base_url, headers=headers, timeout=10) as client:
        claimed = client.get("/agent/v1/inbox/next", params={"wait": 3})
    assert claimed.status_code == 200
    assert claimed.json()["id"] == item.id


def test_an_idle_check_in_releases_a_claim_lost_on_the_way(services: Services, base_url: str) -> None:
    item = services.inbox.put("beta", ItemKind.OPERATOR_MESSAGE, "operator", "lost")
    services.db.execute(
        "UPDATE inbox SET state = 'claimed', claimed_at = '2000-01-01T00:00:00+00:00' WHERE id = ?",
        (item.id,),
    )
    idle = CheckIn(state="idle", pid=1, uptime_s=1.0)
    with agent_client(services, base_url, "beta") as client:
        assert client.post("/agent/v1/checkin", json=idle.model_dump(mode="json")).status_code == 200
    assert services.inbox.state(item.id) == "queued"


def test_agents_may_not_forge_orchestrator_events(services: Services, base_url: str) -> None:
    with agent_client(services, base_url, "alpha") as client:
        refused = client.post("/agent/v1/events", json={"type": "agent.restarted", "data": {}})
        accepted = client.post("/agent/v1/events", json={"type": "compaction.done", "data": {"turns": 3}})
    assert refused.status_code == 422 and "may not report" in refused.json()["message"]
    assert accepted.status_code == 204
    assert [e.type for e in services.events.recent(agent="alpha")] == ["compaction.done"]

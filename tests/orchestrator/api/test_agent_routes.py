"""Agent routes over real HTTP and the agent channel over a real WebSocket: config, check-ins,
the inbox long-poll, progress and done."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from agent_runtime.health import is_alive
from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AskRequest, ChannelAsk, ChannelDone, CheckIn, ItemKind, WorkResult
from agent_runtime.transport.boot import report_in
from agent_runtime.transport.channel import AgentChannel, channel_url
from agent_runtime.transport.client import OrchestratorClient
from agent_runtime.transport.errors import OrchestratorRefused, OrchestratorUnavailable
from orchestrator.api.app import create_app
from orchestrator.config.settings import runtime_hash
from orchestrator.services import Services
from orchestrator.testing.fake_fleet import agent_http, fake_fleet_services
from orchestrator.testing.server import serve_app

FLEET = (
    "version: 1\nfleet: routes\nagents:\n  alpha:\n    role: a\n    talks_to: [beta]\n  beta:\n    role: b\n"
)


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    with fake_fleet_services(tmp_path, FLEET) as built:
        yield built


@pytest.fixture
def base_url(services: Services) -> Iterator[str]:
    with serve_app(create_app(services)) as url:
        yield url


def test_config_is_served_to_the_agent_and_holds_no_secret(services: Services, base_url: str) -> None:
    with agent_http(services, base_url, "alpha") as client:
        config = client.get("/agent/v1/config").json()
    assert config["agent"] == "alpha" and config["talks_to"] == ["beta"]
    assert config["config_hash"] == runtime_hash(services.fleet, "alpha")
    assert not any("key" in name.lower() for name in config)


def test_routes_refuse_missing_and_operator_tokens(services: Services, base_url: str) -> None:
    assert httpx.get(f"{base_url}/agent/v1/config").status_code == 401
    operator = {"authorization": f"Bearer {services.operator_token}"}
    response = httpx.get(f"{base_url}/agent/v1/config", headers=operator)
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"


def test_long_poll_delivers_progress_and_result(services: Services, base_url: str) -> None:
    with agent_http(services, base_url, "beta") as client:
        assert client.get("/agent/v1/inbox/next", params={"wait": 0}).status_code == 204
        item = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "hi")
        claimed = client.get("/agent/v1/inbox/next", params={"wait": 1}).json()
        assert claimed["id"] == item.id and claimed["attempt"] == 1
        assert client.post(f"/agent/v1/inbox/{item.id}/progress", json={"delta": "he"}).status_code == 204
        done = client.post(f"/agent/v1/inbox/{item.id}/done", json={"ok": True, "text": "hello"})
        assert done.status_code == 204
    assert services.inbox.result(item.id) == WorkResult(ok=True, text="hello")


def test_an_agent_cannot_touch_another_agents_item(services: Services, base_url: str) -> None:
    item = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "for beta")
    with agent_http(services, base_url, "alpha") as client:
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
    item = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "still there?")
    with httpx.Client(base_url=base_url, headers=headers, timeout=10) as client:
        claimed = client.get("/agent/v1/inbox/next", params={"wait": 3})
    assert claimed.status_code == 200
    assert claimed.json()["id"] == item.id


def test_an_idle_check_in_releases_a_claim_lost_on_the_way(services: Services, base_url: str) -> None:
    item = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "lost")
    services.db.execute(
        "UPDATE inbox SET state = 'claimed', claimed_at = '2000-01-01T00:00:00+00:00' WHERE id = ?",
        (item.id,),
    )
    idle = CheckIn(state="idle", pid=1, uptime_s=1.0)
    with agent_http(services, base_url, "beta") as client:
        assert client.post("/agent/v1/checkin", json=idle.model_dump(mode="json")).status_code == 200
    assert services.inbox.state(item.id) == "queued"


def test_agents_may_not_forge_orchestrator_events(services: Services, base_url: str) -> None:
    with agent_http(services, base_url, "alpha") as client:
        refused = client.post("/agent/v1/events", json={"type": "agent.restarted", "data": {}})
        accepted = client.post("/agent/v1/events", json={"type": "compaction.done", "data": {"turns": 3}})
    assert refused.status_code == 422 and "may not report" in refused.json()["message"]
    assert accepted.status_code == 204
    assert [e.type for e in services.events.recent(agent="alpha")] == ["compaction.done"]


# --- the agent channel (a WebSocket), driven by the agent's own client ---------------------


def runtime_client(services: Services, base_url: str, agent: str, tmp_path: Path) -> OrchestratorClient:
    """The agent's own client (its link included), as agent_runtime uses it."""
    token_file = tmp_path / f"{agent}.token"
    token_file.write_text(services.tokens.mint(agent))
    return OrchestratorClient(base_url, token_file)


def test_config_and_check_ins_over_the_channel(services: Services, base_url: str, tmp_path: Path) -> None:
    client = runtime_client(services, base_url, "alpha", tmp_path)
    try:
        config = client.get_config()
        assert config.agent == "alpha" and config.talks_to == ["beta"]
        reply = client.checkin(CheckIn(state="idle", pid=42, uptime_s=1.0))
        assert reply.config_hash == runtime_hash(services.fleet, "alpha")
        sighting = services.health.last("alpha")
        assert sighting is not None and sighting.checkin.pid == 42
        assert services.health.is_checking_in("alpha")
    finally:
        client.close()


def test_a_config_reload_is_not_a_new_incarnation(services: Services, base_url: str, tmp_path: Path) -> None:
    """A running agent that fetches its changed config keeps its check-ins and its claims: were it
    taken for a new process, the supervisor would restart it for not checking in."""
    client = runtime_client(services, base_url, "alpha", tmp_path)
    try:
        client.get_config()
        client.checkin(CheckIn(state="idle", pid=42, uptime_s=1.0))
        queued = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "hello").id
        claimed = client.next_item(1.0)
        assert claimed is not None and claimed.id == queued
        client.get_config(reload=True)
        assert services.health.is_checking_in("alpha")
        assert services.inbox.state(queued) == "claimed"
        client.get_config()
        assert not services.health.is_checking_in("alpha")
        assert services.inbox.state(queued) == "queued"
    finally:
        client.close()


def test_inbox_round_trip_over_the_channel(services: Services, base_url: str, tmp_path: Path) -> None:
    client = runtime_client(services, base_url, "alpha", tmp_path)
    try:
        assert client.next_item(0.05) is None
        queued = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "hello")
        item = client.next_item(1.0)
        assert item is not None and item.id == queued.id and item.text == "hello"
        client.progress(item.id, "partial ")
        client.done(item.id, WorkResult(text="done"))
        result = services.inbox.result(item.id)
        assert result is not None and result.text == "done"
        assert services.inbox.state(item.id) == "done"
    finally:
        client.close()


def test_channel_refuses_missing_wrong_and_operator_tokens(services: Services, base_url: str) -> None:
    for token in ("", "not-a-token", services.operator_token):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        with pytest.raises(InvalidStatus) as refused:
            connect(channel_url(base_url), additional_headers=headers, proxy=None).close()
        assert refused.value.response.status_code in (401, 403)

    channel = AgentChannel(base_url, lambda: "not-a-token")
    with pytest.raises(OrchestratorRefused):
        channel.call(ChannelDone(item_id="x", result=WorkResult()), 5)
    channel.close()


def test_frames_are_checked_like_their_routes(services: Services, base_url: str, tmp_path: Path) -> None:
    alpha = runtime_client(services, base_url, "alpha", tmp_path)
    beta = runtime_client(services, base_url, "beta", tmp_path)
    try:
        betas = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "for beta")
        with pytest.raises(OrchestratorRefused) as not_yours:
            alpha.done(betas.id, WorkResult(text="stolen"))
        assert not_yours.value.status == 404
        assert services.inbox.state(betas.id) == "queued"

        too_long = AskRequest(to="beta", operation="x", timeout_s=10_000)
        with pytest.raises(OrchestratorRefused) as invalid:
            alpha.channel.call(ChannelAsk(request=too_long), 5)
        assert invalid.value.status == 422 and "timeout_s" in str(invalid.value)
        # The refusals left the connection usable.
        assert beta.next_item(1.0) is not None
    finally:
        alpha.close()
        beta.close()


def _next_reply(socket: Any) -> Any:
    """The next reply, past the orchestrator's own requests (the workspace it sends on connect)."""
    while "request" in (message := json.loads(socket.recv(5))):
        pass
    return message


def test_a_malformed_frame_is_answered_not_fatal(services: Services, base_url: str) -> None:
    token = services.tokens.mint("alpha")
    headers = {"Authorization": f"Bearer {token}"}
    with connect(channel_url(base_url), additional_headers=headers, proxy=None) as socket:
        socket.send('{"id": 3, "type": "launch"}')
        reply = _next_reply(socket)
        assert reply["id"] == 0 and reply["status"] == 422
        assert reply["body"]["error"] == "invalid_request"
        socket.send('{"id": 4, "type": "next", "wait_s": 0}')
        assert _next_reply(socket) == {"id": 4, "status": 204, "body": None}


def test_a_long_poll_on_a_closed_channel_loses_no_item(
    services: Services, base_url: str, tmp_path: Path
) -> None:
    token = services.tokens.mint("alpha")
    with connect(
        channel_url(base_url), additional_headers={"Authorization": f"Bearer {token}"}, proxy=None
    ) as ws:
        ws.send('{"id": 1, "type": "next", "wait_s": 5}')
        time.sleep(0.2)  # the long-poll is now waiting on the server
    queued = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "after the close")
    time.sleep(0.2)
    assert services.inbox.state(queued.id) == "queued"
    client = runtime_client(services, base_url, "alpha", tmp_path)
    try:
        item = client.next_item(1.0)
        assert item is not None and item.id == queued.id
    finally:
        client.close()


def test_a_broken_connection_is_replaced_on_the_next_call(
    services: Services, base_url: str, tmp_path: Path
) -> None:
    client = runtime_client(services, base_url, "alpha", tmp_path)
    try:
        assert client.next_item(0) is None
        broken = client.channel._conn
        assert broken is not None
        broken.close()  # as a dropped network connection would
        deadline = time.monotonic() + 5
        while client.channel._conn is broken and time.monotonic() < deadline:
            time.sleep(0.01)
        queued = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "still here")
        item = client.next_item(1.0)
        assert item is not None and item.id == queued.id
        assert client.channel._conn is not broken
    finally:
        client.close()


def test_calls_fail_as_unavailable_when_the_orchestrator_is_gone(services: Services, tmp_path: Path) -> None:
    token_file = tmp_path / "alpha.token"
    token_file.write_text(services.tokens.mint("alpha"))
    with serve_app(create_app(services)) as url:
        client = OrchestratorClient(url, token_file)
        assert client.next_item(0) is None
    # The server is gone: the broken channel is noticed and reported as unavailable.
    with pytest.raises(OrchestratorUnavailable):
        client.next_item(0)
    client.close()


# --- readiness: what `up -d` waits on ------------------------------------------------------


def test_readiness_answers_as_soon_as_every_awake_agent_takes_messages(
    services: Services, base_url: str, tmp_path: Path
) -> None:
    operator = {"authorization": f"Bearer {services.operator_token}"}
    now = httpx.get(f"{base_url}/api/v1/fleet/ready", headers=operator).json()
    assert now == {
        "healthy": 0,
        "answering": 0,
        "total": 2,
        "asleep": 0,
        "applying": False,
        "problems": [],
        "warnings": [],
    }

    clients = [runtime_client(services, base_url, agent, tmp_path) for agent in ("alpha", "beta")]
    # Reported in, runtime not loaded yet: checked in, but not taking messages.
    for client in clients:
        client.checkin(CheckIn(state="starting", pid=1, uptime_s=0.1))
    starting = httpx.get(f"{base_url}/api/v1/fleet/ready", params={"wait": 0.5}, headers=operator, timeout=20)
    assert starting.json() == {
        "healthy": 2,
        "answering": 0,
        "total": 2,
        "asleep": 0,
        "applying": False,
        "problems": [],
        "warnings": [],
    }

    def load_runtime_later() -> None:
        time.sleep(0.3)
        for client in clients:
            client.checkin(CheckIn(state="idle", pid=1, uptime_s=1.0))

    later = threading.Thread(target=load_runtime_later)
    later.start()
    try:
        waited = httpx.get(f"{base_url}/api/v1/fleet/ready", params={"wait": 8}, headers=operator, timeout=20)
        assert waited.json() == {
            "healthy": 2,
            "answering": 2,
            "total": 2,
            "asleep": 0,
            "applying": False,
            "problems": [],
            "warnings": [],
        }
    finally:
        later.join()
        for client in clients:
            client.close()


def test_an_agent_back_from_an_idle_release_still_takes_messages(
    services: Services, base_url: str, tmp_path: Path
) -> None:
    operator = {"authorization": f"Bearer {services.operator_token}"}
    clients = [runtime_client(services, base_url, agent, tmp_path) for agent in ("alpha", "beta")]
    try:
        # alpha restarts in place after work (turns carried over); beta is new.
        clients[0].checkin(CheckIn(state="starting", pid=1, uptime_s=90.0, turns=3))
        clients[1].checkin(CheckIn(state="starting", pid=2, uptime_s=0.1))
        answer = httpx.get(f"{base_url}/api/v1/fleet/ready", headers=operator).json()
        assert answer == {
            "healthy": 2,
            "answering": 1,
            "total": 2,
            "asleep": 0,
            "applying": False,
            "problems": [],
            "warnings": [],
        }
    finally:
        for client in clients:
            client.close()


def test_an_item_is_followed_with_one_waiting_request(services: Services, base_url: str) -> None:
    operator = {"authorization": f"Bearer {services.operator_token}"}
    item = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "hi")
    url = f"{base_url}/api/v1/items/{item.id}"
    assert httpx.get(url, headers=operator).json() == {"item_id": item.id, "state": "queued", "result": None}
    # Nothing within the wait: the state as it is, without a result.
    assert httpx.get(url, params={"wait": 0.2}, headers=operator).json()["result"] is None

    def answer_later() -> None:
        time.sleep(0.3)
        assert services.inbox.complete("beta", item.id, WorkResult(ok=True, text="hello"))

    later = threading.Thread(target=answer_later)
    later.start()
    try:
        waited = httpx.get(url, params={"wait": 8}, headers=operator, timeout=20).json()
    finally:
        later.join()
    assert waited["state"] == "done" and waited["result"]["text"] == "hello"
    # Already answered: at once, whatever the wait.
    assert httpx.get(url, params={"wait": 8}, headers=operator).json() == waited
    assert httpx.get(f"{base_url}/api/v1/items/nope", headers=operator).status_code == 404
    assert httpx.get(url, params={"wait": 999}, headers=operator).status_code == 422


def test_readiness_leaves_out_hibernated_agents_and_reports_problems(
    services: Services, base_url: str
) -> None:
    operator = {"authorization": f"Bearer {services.operator_token}"}
    now = datetime.now(UTC)
    services.scheduler.store.state("beta", now)  # the scheduler has seen beta
    assert services.scheduler.store.desired.set("beta", "asleep", now)
    services.manager.problems = ["alpha: cannot start: no space left"]
    answer = httpx.get(f"{base_url}/api/v1/fleet/ready", params={"wait": 8}, headers=operator, timeout=20)
    assert answer.json() == {
        "healthy": 0,
        "answering": 0,
        "total": 1,
        "asleep": 1,
        "applying": False,
        "problems": ["alpha: cannot start: no space left"],
        "warnings": [],
    }
    assert (
        httpx.get(f"{base_url}/api/v1/fleet/ready", params={"wait": 99}, headers=operator).status_code == 422
    )


# --- reporting in with the standard library alone (agent_runtime.transport.boot) ----------------------


def test_a_new_agent_reports_in_before_its_runtime_loads(
    services: Services, base_url: str, tmp_path: Path
) -> None:
    settings = Settings(orchestrator_url=base_url, agent="alpha", data_dir=tmp_path / "alpha")
    settings.runtime_dir.mkdir(parents=True)
    settings.token_file.write_text(services.tokens.mint("alpha"))
    config = report_in(settings, threading.Event())
    assert config is not None and json.loads(config)["agent"] == "alpha"
    sighting = services.health.last("alpha")
    assert sighting is not None and sighting.checkin.state == "starting"
    # The orchestrator may count the agent healthy from here: its liveness probe passes too.
    assert is_alive(settings.data_dir)

    ghost = Settings(orchestrator_url=base_url, agent="ghost", data_dir=tmp_path / "ghost")
    ghost.runtime_dir.mkdir(parents=True)
    ghost.token_file.write_text(services.tokens.mint("ghost"))
    assert report_in(ghost, threading.Event()) is None  # 410: no longer part of the fleet


def test_refusals_are_the_same_by_http_and_over_the_channel(services: Services, base_url: str) -> None:
    """An agent no longer in the fleet (410) and an item the agent does not hold (404) get the
    same status and body whichever way the call came."""
    betas = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "for beta").id
    removed = {
        "error": "agent_removed",
        "message": "agent 'ghost' is no longer part of the fleet",
        "details": [],
    }
    not_held = {"error": "not_found", "message": f"no inbox item {betas}", "details": []}
    with (
        agent_http(services, base_url, "ghost") as ghost,
        agent_http(services, base_url, "alpha") as alpha,
    ):
        http = [
            ghost.get("/agent/v1/config"),
            ghost.post(
                "/agent/v1/checkin", json=CheckIn(state="idle", pid=1, uptime_s=1.0).model_dump(mode="json")
            ),
            alpha.post(f"/agent/v1/inbox/{betas}/progress", json={"delta": "x"}),
            alpha.post(f"/agent/v1/inbox/{betas}/done", json={"ok": True, "text": "stolen"}),
        ]
        assert [(r.status_code, r.json()) for r in http] == [(410, removed)] * 2 + [(404, not_held)] * 2
        alpha_token = alpha.headers["authorization"]
        ghost_token = ghost.headers["authorization"]
    frames = [
        (ghost_token, {"id": 1, "type": "config"}),
        (ghost_token, {"id": 2, "type": "checkin", "checkin": {"state": "idle", "pid": 1, "uptime_s": 1.0}}),
        (alpha_token, {"id": 3, "type": "progress", "item_id": betas, "delta": "x"}),
        (alpha_token, {"id": 4, "type": "done", "item_id": betas, "result": {"ok": True, "text": "stolen"}}),
    ]
    replies = []
    for token, frame in frames:
        with connect(
            channel_url(base_url), additional_headers={"Authorization": token}, proxy=None
        ) as socket:
            socket.send(json.dumps(frame))
            replies.append(_next_reply(socket))
    assert [(r["id"], r["status"], r["body"]) for r in replies] == [
        (1, 410, removed),
        (2, 410, removed),
        (3, 404, not_held),
        (4, 404, not_held),
    ]
    assert services.inbox.state(betas) == "queued"

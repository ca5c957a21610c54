"""Every input has a cap (fleet.yaml `limits:`): oversized requests get a 413 naming the limit, the
channel that carried them keeps working, and nothing oversized reaches the inbox or state.db.
Poison items are dead-lettered after `limits.delivery_attempts` deliveries."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from broker_helpers import FLEET_YAML, build_services, write_fleet
from click.testing import CliRunner

from agent_runtime.protocol import ChannelDone, ChannelTell, ItemKind, TellRequest, WorkResult
from agent_runtime.transport.channel import MAX_FRAME_BYTES, AgentChannel
from agent_runtime.transport.errors import OrchestratorRefused
from orchestrator.api.app import create_app
from orchestrator.cli.main import cli
from orchestrator.events import MAX_EVENT_DATA_BYTES, EventType
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.server import serve_app

LIMITS = """\
limits:
  request_body: 256k
  message: 8k
  payload: 8k
  event: 2k
  delivery_attempts: 3
"""
KIB = 1024


@dataclass
class Served:
    url: str
    services: Services
    tokens: dict[str, str]
    operator: httpx.Client

    def agent(self, name: str) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"authorization": f"Bearer {self.tokens[name]}"}, timeout=10
        )


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    services = build_services(write_fleet(tmp_path / "fleet", FLEET_YAML + LIMITS))
    tokens = {name: services.tokens.mint(name) for name in services.fleet.config.agents}
    with serve_app(create_app(services)) as url:
        operator = httpx.Client(
            base_url=url, headers={"authorization": f"Bearer {services.operator_token}"}, timeout=10
        )
        yield Served(url, services, tokens, operator)
        operator.close()
    services.db.close()


def db_bytes(services: Services) -> int:
    path = Path(str(services.db.path))
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def assert_names_limit(response: httpx.Response, limit: str) -> None:
    assert response.status_code == 413, response.text
    body = response.json()
    assert body["error"] == "too_large"
    assert f"limits.{limit}" in body["message"]


def test_an_oversized_tell_on_the_channel_is_refused_and_the_channel_keeps_working(served: Served) -> None:
    channel = AgentChannel(served.url, lambda: served.tokens["alpha"])
    try:
        with pytest.raises(OrchestratorRefused) as refused:
            channel.call(ChannelTell(request=TellRequest(to="beta", text="x" * (9 * KIB))), timeout_s=10)
        assert refused.value.status == 413 and "limits.payload" in str(refused.value)
        # A frame over the link's own size would close it (1009): the runtime refuses it first.
        with pytest.raises(OrchestratorRefused) as too_big:
            channel.call(ChannelTell(request=TellRequest(to="beta", text="x" * (MAX_FRAME_BYTES + 1))), 10)
        assert too_big.value.status == 413 and "frame" in str(too_big.value)
        fine = channel.call(ChannelTell(request=TellRequest(to="beta", text="short and sweet")), timeout_s=10)
        assert fine.status == 200 and fine.body["ok"] is True
    finally:
        channel.close()
    texts = [item.text for item in served.services.inbox.list("beta")]
    assert texts == ["short and sweet"]


def test_oversized_tell_and_ask_over_http_get_413(served: Served) -> None:
    with served.agent("alpha") as alpha:
        tell = alpha.post("/agent/v1/tell", json={"to": "beta", "text": "y" * (9 * KIB)})
        assert_names_limit(tell, "payload")
        ask = alpha.post(
            "/agent/v1/ask", json={"to": "beta", "operation": "summarize", "input": {"text": "z" * (9 * KIB)}}
        )
        assert_names_limit(ask, "payload")
    assert served.services.inbox.list("beta") == []


def test_an_oversized_operator_message_gets_413_and_queues_nothing(served: Served) -> None:
    answer = served.operator.post("/api/v1/agents/beta/messages", json={"text": "m" * (9 * KIB)})
    assert_names_limit(answer, "message")
    assert served.services.inbox.pending("beta") == 0


def test_a_body_over_the_request_limit_is_refused_before_any_route(served: Served) -> None:
    before = db_bytes(served.services)
    body = json.dumps({"text": "b" * (300 * KIB)})
    answer = served.operator.post(
        "/api/v1/agents/beta/messages", content=body, headers={"content-type": "application/json"}
    )
    assert_names_limit(answer, "request_body")

    # Without a Content-Length (chunked), the body is cut off at the limit all the same.
    def chunks() -> Iterator[bytes]:
        for _ in range(40):
            yield b"c" * (10 * KIB)

    chunked = served.operator.post("/api/v1/agents/beta/messages", content=chunks())
    assert_names_limit(chunked, "request_body")
    assert served.services.inbox.pending("beta") == 0
    assert db_bytes(served.services) - before < 64 * KIB


def test_an_oversized_agent_event_gets_413_and_does_not_grow_state(served: Served) -> None:
    services = served.services
    before = len(services.events.recent(limit=1000))
    size_before = db_bytes(services)
    with served.agent("alpha") as alpha:
        huge = alpha.post(
            "/agent/v1/events", json={"type": "agent.reported", "data": {"note": "e" * (3 * KIB)}}
        )
        assert_names_limit(huge, "event")
        small = alpha.post("/agent/v1/events", json={"type": "agent.reported", "data": {"note": "fine"}})
        assert small.status_code == 204
    assert len(services.events.recent(limit=1000)) == before + 1
    assert db_bytes(services) - size_before < 64 * KIB


def test_any_event_is_stored_as_a_summary_past_the_cap(served: Served) -> None:
    services = served.services
    event = services.events.publish("agent.reported", agent="alpha", blob="q" * (4 * MAX_EVENT_DATA_BYTES))
    assert event.data["truncated"] is True and event.data["keys"] == ["blob"]
    stored = services.db.query_one("SELECT length(data) AS n FROM events WHERE seq = ?", (event.seq,))
    assert stored is not None and stored["n"] < 1024


def test_an_oversized_work_result_fails_its_item_instead_of_looping(served: Served) -> None:
    services = served.services
    item = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "hello")
    claimed = asyncio.run(services.inbox.next("beta", 1))
    assert claimed is not None and claimed.id == item.id
    channel = AgentChannel(served.url, lambda: served.tokens["beta"])
    try:
        with pytest.raises(OrchestratorRefused) as refused:
            channel.call(ChannelDone(item_id=item.id, result=WorkResult(text="r" * (9 * KIB))), timeout_s=10)
    finally:
        channel.close()
    assert refused.value.status == 413 and "limits.payload" in str(refused.value)
    assert services.inbox.state(item.id) == "failed"
    result = services.inbox.result(item.id)
    assert result is not None and not result.ok and "limits.payload" in (result.error or "")


# --- dead letters ----------------------------------------------------------------------------


def deliver_without_answer(services: Services, agent: str, times: int) -> None:
    """Claim and lose the item `times` times, as an agent that crashes on it would."""
    for _ in range(times):
        claimed = asyncio.run(services.inbox.next(agent, 0))
        assert claimed is not None
        services.inbox.requeue_claimed(agent)  # the agent's next process asks for its config


def test_a_poison_item_is_dead_lettered_listed_retried_and_dropped(served: Served) -> None:
    services = served.services
    poison = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "this crashes beta")
    deliver_without_answer(services, "beta", 3)
    assert asyncio.run(services.inbox.next("beta", 0)) is None
    assert services.inbox.state(poison.id) == "dead"
    dead_events = [e for e in services.events.recent(limit=100) if e.type == EventType.MESSAGE_DEAD_LETTERED]
    assert [e.data["item_id"] for e in dead_events] == [poison.id]
    result = services.inbox.result(poison.id)
    assert result is not None and not result.ok and "dead-lettered after 3 deliveries" in (result.error or "")

    listed = served.operator.get("/api/v1/agents/beta/dead-letters").json()
    assert [(d["id"], d["attempts"], d["preview"]) for d in listed] == [(poison.id, 3, "this crashes beta")]
    assert services.inbox.dead_count("beta") == 1
    assert services.inbox.pending("beta") == 0

    runner = CliRunner()
    fleet_file = services.fleet.path
    write_endpoint(services.paths, Endpoint(url=served.url, token=services.operator_token, pid=os.getpid()))
    shown = runner.invoke(cli, ["inbox", "-f", str(fleet_file), "beta"])
    assert shown.exit_code == 0, shown.output
    assert "1 dead-lettered" in shown.output and poison.id in shown.output

    retried = runner.invoke(cli, ["inbox", "retry", "-f", str(fleet_file), "beta", poison.id[:10]])
    assert retried.exit_code == 0, retried.output
    assert services.inbox.state(poison.id) == "queued"
    again = asyncio.run(services.inbox.next("beta", 0))
    assert again is not None and again.id == poison.id and again.attempt == 1

    services.inbox.requeue_claimed("beta")
    deliver_without_answer(services, "beta", 2)
    assert asyncio.run(services.inbox.next("beta", 0)) is None
    dropped = runner.invoke(cli, ["inbox", "drop", "-f", str(fleet_file), "beta", poison.id])
    assert dropped.exit_code == 0, dropped.output
    assert services.inbox.state(poison.id) == "dropped"
    assert served.operator.get("/api/v1/agents/beta/dead-letters").json() == []
    missing = runner.invoke(cli, ["inbox", "retry", "-f", str(fleet_file), "beta", poison.id])
    assert missing.exit_code != 0 and "no dead-lettered item" in str(missing.exception)


def test_a_released_claim_does_not_count_as_a_delivery(served: Served) -> None:
    services = served.services
    item = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "patient")
    for _ in range(5):
        claimed = asyncio.run(services.inbox.next("beta", 0))
        assert claimed is not None
        services.inbox.release(item.id)  # the long-poll's client went away before receiving it
    assert services.inbox.state(item.id) == "queued"


def test_a_lower_channel_frame_limit_is_applied_on_both_sides(tmp_path: Path) -> None:
    """With limits.channel_frame below the runtime's own ceiling, the agent learns it from its
    config and refuses a bigger frame itself, so the server never has to close the channel."""
    from agent_runtime.transport.client import OrchestratorClient

    services = build_services(
        write_fleet(tmp_path / "fleet", FLEET_YAML + "limits:\n  channel_frame: 128k\n")
    )
    token_file = tmp_path / "token"
    token_file.write_text(services.tokens.mint("alpha"))
    server = create_app(services)
    with serve_app(server, ws_max_size=services.fleet.config.limits.bytes_of("channel_frame")) as url:
        client = OrchestratorClient(url, token_file)
        try:
            config = client.get_config()
            assert config.max_frame_bytes == 128 * KIB
            client.use_limits(config)
            with pytest.raises(OrchestratorRefused) as refused:
                client.channel.call(ChannelTell(request=TellRequest(to="beta", text="f" * (200 * KIB))), 10)
            assert refused.value.status == 413 and str(128 * KIB) in str(refused.value)
            fine = client.channel.call(ChannelTell(request=TellRequest(to="beta", text="fits")), timeout_s=10)
            assert fine.status == 200
        finally:
            client.close()
    services.db.close()

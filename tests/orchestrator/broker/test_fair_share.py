"""Each agent's fair share (fleet.yaml `limits.rates`): floods of events, tells and asks get 429
with Retry-After, one `limit.exceeded` event per episode, and a peer cannot fill another's inbox
or spend its intake faster than the declared rates. Real HTTP and the real agent channel."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from broker_helpers import FLEET_YAML, build_services, write_fleet
from click.testing import CliRunner

from agent_runtime.protocol import ChannelTell, TellRequest
from agent_runtime.transport.channel import AgentChannel
from agent_runtime.transport.errors import OrchestratorRefused
from orchestrator.api.app import create_app
from orchestrator.cli.main import cli
from orchestrator.errors import RateLimited
from orchestrator.events import EventType
from orchestrator.fair_share import FairShare
from orchestrator.services import Services
from orchestrator.state.endpoint import Endpoint, write_endpoint
from orchestrator.testing.server import serve_app

RATES = """\
limits:
  rates:
    events: 5/m
    runs: 3/m
    tells: 8/m
    asks: 8/m
    pair: 4/m
    intake: 6/m
    pending: 50
"""


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

    def limit_events(self, agent: str) -> list[dict[str, object]]:
        return [
            event.data
            for event in self.services.events.recent(1000, agent=agent)
            if event.type == EventType.LIMIT_EXCEEDED
        ]


def serve(tmp_path: Path, limits: str) -> Iterator[Served]:
    services = build_services(write_fleet(tmp_path / "fleet", FLEET_YAML + limits))
    tokens = {name: services.tokens.mint(name) for name in services.fleet.config.agents}
    with serve_app(create_app(services)) as url:
        operator = httpx.Client(
            base_url=url, headers={"authorization": f"Bearer {services.operator_token}"}, timeout=10
        )
        yield Served(url, services, tokens, operator)
        operator.close()
    services.db.close()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path, RATES)


def test_an_event_flood_gets_429_with_retry_after_and_one_event_per_episode(served: Served) -> None:
    with served.agent("alpha") as alpha:
        answers = [
            alpha.post("/agent/v1/events", json={"type": "agent.reported", "data": {"n": n}})
            for n in range(20)
        ]
    assert [a.status_code for a in answers] == [204] * 5 + [429] * 15
    refused = answers[-1]
    assert refused.json()["error"] == "rate_limited" and "limits.rates.events" in refused.json()["message"]
    assert 1 <= int(refused.headers["retry-after"]) <= 12
    reported = [e for e in served.services.events.recent(1000, agent="alpha") if e.type == "agent.reported"]
    assert len(reported) == 5
    assert [e["limit"] for e in served.limit_events("alpha")] == ["events"]


def test_a_tell_flood_to_one_peer_stops_at_the_pair_rate(served: Served) -> None:
    with served.agent("alpha") as alpha:
        answers = [alpha.post("/agent/v1/tell", json={"to": "beta", "text": f"spam {n}"}) for n in range(12)]
    assert [a.status_code for a in answers] == [200] * 4 + [429] * 8
    assert "limits.rates.pair" in answers[-1].json()["message"] and "retry-after" in answers[-1].headers
    assert served.services.inbox.pending("beta") == 4
    assert [e["limit"] for e in served.limit_events("alpha")] == ["pair"]


def test_peers_together_cannot_pass_the_recipients_intake(served: Served) -> None:
    with served.agent("beta") as beta, served.agent("gamma") as gamma:
        from_beta = [beta.post("/agent/v1/tell", json={"to": "alpha", "text": "b"}) for _ in range(4)]
        from_gamma = [gamma.post("/agent/v1/tell", json={"to": "alpha", "text": "g"}) for _ in range(4)]
    assert [a.status_code for a in from_beta] == [200] * 4
    assert [a.status_code for a in from_gamma] == [200] * 2 + [429] * 2
    assert "limits.rates.intake" in from_gamma[-1].json()["message"]
    assert served.services.inbox.pending("alpha") == 6


def test_a_message_the_acl_refuses_costs_the_recipient_nothing(served: Served) -> None:
    # alpha may not talk to delta: its tells are refused and logged, paid from alpha's own rate.
    with served.agent("alpha") as alpha:
        refused = [alpha.post("/agent/v1/tell", json={"to": "delta", "text": "x"}) for _ in range(10)]
    assert [a.status_code for a in refused] == [200] * 8 + [429] * 2
    assert all(a.json()["ok"] is False for a in refused[:8])
    assert "limits.rates.tells" in refused[-1].json()["message"]
    with served.agent("gamma") as gamma:
        fine = [
            gamma.post("/agent/v1/tell", json={"to": "delta", "text": "hi"}).status_code for _ in range(4)
        ]
    assert fine == [200] * 4


def test_the_pending_quota_caps_one_senders_items_in_a_peers_inbox(tmp_path: Path) -> None:
    limits = "limits:\n  rates:\n    pair: 100/m\n    pending: 3\n"
    for served in serve(tmp_path, limits):
        with served.agent("alpha") as alpha:
            answers = [alpha.post("/agent/v1/tell", json={"to": "beta", "text": "t"}) for _ in range(5)]
        assert [a.status_code for a in answers] == [200] * 3 + [429] * 2
        assert "limits.rates.pending" in answers[-1].json()["details"][0]
        assert served.services.inbox.pending("beta") == 3


def test_a_tell_flood_on_the_channel_gets_429_frames(served: Served) -> None:
    channel = AgentChannel(served.url, lambda: served.tokens["alpha"])
    statuses = []
    try:
        for n in range(6):
            try:
                statuses.append(
                    channel.call(ChannelTell(request=TellRequest(to="beta", text=f"c{n}")), 10).status
                )
            except OrchestratorRefused as refused:
                statuses.append(refused.status)
                assert "retry_after_s" in str(refused) or "limits.rates.pair" in str(refused)
    finally:
        channel.close()
    assert statuses == [200] * 4 + [429] * 2


def test_the_operator_sees_each_agents_limits_and_refusals(served: Served) -> None:
    with served.agent("alpha") as alpha:
        for _ in range(7):
            alpha.post("/agent/v1/events", json={"type": "agent.reported", "data": {}})
    answer = served.operator.get("/api/v1/limits")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["rates"]["events"] == "5/m"
    (state,) = [s for s in body["agents"] if s["agent"] == "alpha"]
    assert state["limit"] == "events" and state["refused"] == 2 and state["limited_since"] is not None


def test_a_sustained_flood_is_one_episode_and_a_later_one_another(served: Served) -> None:
    now = [0.0]
    limiter = FairShare(
        lambda: served.services.fleet.config.limits.rates,
        served.services.events,
        lambda _a, _s: 0,
        lambda: now[0],
    )
    admitted = 0
    for _ in range(600):  # five minutes of an event every half second, at 5/m
        try:
            limiter.admit_event("beta")
            admitted += 1
        except RateLimited:
            pass
        now[0] += 0.5
    assert 5 + 24 <= admitted <= 5 + 26  # the burst, then the rate
    assert len(served.limit_events("beta")) == 1
    now[0] += 120  # two quiet minutes
    for _ in range(10):
        with contextlib.suppress(RateLimited):
            limiter.admit_event("beta")
    assert len(served.limit_events("beta")) == 2


def test_flotilla_limits_shows_who_was_refused_and_what_each_agent_keeps(served: Served) -> None:
    with served.agent("alpha") as alpha:
        for _ in range(6):
            alpha.post("/agent/v1/events", json={"type": "agent.reported", "data": {}})
    services = served.services
    write_endpoint(services.paths, Endpoint(url=served.url, token=services.operator_token, pid=os.getpid()))
    fleet_file = services.fleet.path
    shown = CliRunner().invoke(cli, ["limits", "-f", str(fleet_file)], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    assert "events 5/m" in shown.output and "limited since" in shown.output
    assert "alpha" in shown.output and "bound 15.0 MiB" in shown.output
    as_json = CliRunner().invoke(cli, ["limits", "-f", str(fleet_file), "--json"])
    assert '"refused": 1' in as_json.output


def test_a_run_record_flood_gets_429_and_an_oversized_record_413(served: Served) -> None:
    def record(n: int, detail: str = "") -> dict[str, object]:
        now = "2026-12-01T10:00:00+00:00"
        return {
            "id": f"run-{n}",
            "agent": "alpha",
            "trigger": "operator",
            "started_at": now,
            "finished_at": now,
            "outcome": "ok",
            "detail": detail,
        }

    with served.agent("alpha") as alpha:
        too_big = alpha.post("/agent/v1/runs", json=record(99, "d" * 1_100_000))
        answers = [alpha.post("/agent/v1/runs", json=record(n)).status_code for n in range(5)]
    assert too_big.status_code == 413 and "limits.payload" in too_big.json()["message"]
    assert answers == [204] * 3 + [429] * 2
    assert served.services.scheduler.runs.count("alpha") == 3

"""An agent's ordered fallback chain, against two fake upstreams on loopback that fail in turn: a
model that fails after its retries is skipped for 60 s, then 300 s, then 1500 s while it keeps
failing, and `ps` (the fleet status) and /metrics show it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from gateway_harness import Launch, Orchestrator

from orchestrator.cli.render import cooling_lines
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.control.auth import OPERATOR
from orchestrator.gateway.cooldown import Cooldowns
from orchestrator.testing.fake_upstream import FakeUpstream, Reply

HI = [{"role": "user", "content": "hi"}]
FAILING = [Reply.error(500, "first is down")] * 3  # FAST_RETRY makes three attempts per model


@pytest.fixture
def second() -> Iterator[tuple[FakeUpstream, str]]:
    fake = FakeUpstream()
    with fake.serve() as url:
        yield fake, url
        fake.release()


def fleet(second_url: str) -> str:
    return f"""\
    second: {{base_url: "{second_url}"}}
  fallback_model: test
agents:
  alice:
    model: fake:fake-model
    fallback: [second:fake-model]
  bob:
    model: fake:fake-model
"""


def ask(orch: Orchestrator) -> httpx.Response:
    return orch.http(orch.tokens["alice"]).post(
        "/v1/chat/completions", json={"model": "fake:fake-model", "messages": HI}
    )


def cooling(orch: Orchestrator) -> list[dict[str, Any]]:
    status = orch.http(orch.tokens[OPERATOR]).get("/api/v1/fleet")
    assert status.status_code == 200, status.text
    found: list[dict[str, Any]] = status.json()["models_cooling"]
    return found


def metric(orch: Orchestrator, name: str, model: str) -> float:
    text = orch.http(orch.tokens[OPERATOR]).get("/metrics").text
    prefix = f'{name}{{model="{model}"}} '
    [line] = [line for line in text.splitlines() if line.startswith(prefix)]
    return float(line.removeprefix(prefix))


def test_the_chain_skips_a_failing_model_for_60_then_300_then_1500_seconds(
    launch: Launch, second: tuple[FakeUpstream, str]
) -> None:
    backup, url = second
    orch = launch(fleet(url))
    first = orch.upstream

    first.script(*FAILING)
    answered = ask(orch)
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["content"] == "fake reply to: hi"
    assert (len(first.chat_requests()), len(backup.chat_requests())) == (3, 1)
    [cooldown] = cooling(orch)
    assert (cooldown["model"], cooldown["failures"], cooldown["seconds_left"]) == ("fake:fake-model", 1, 60)
    assert "first is down" in cooldown["error"]
    [shown] = cooling_lines({"models_cooling": [cooldown]})  # what `ps` prints under its table
    assert shown.startswith("model fake:fake-model skipped by the fallback chains for 60s more")
    assert "1 failed calls in a row" in shown and "first is down" in shown
    assert metric(orch, "flotilla_model_cooldown_seconds", "fake:fake-model") == 60
    assert metric(orch, "flotilla_model_failures_in_a_row", "fake:fake-model") == 1
    assert metric(orch, "flotilla_model_cooldown_seconds", "second:fake-model") == 0
    [event] = [e for e in orch.services.events.recent(100) if e.type == "model.cooling"]
    assert (event.data["model"], event.data["failures"], event.data["seconds_left"]) == (
        "fake:fake-model",
        1,
        60,
    )

    assert ask(orch).status_code == 200  # cooling: straight to the fallback
    assert (len(first.chat_requests()), len(backup.chat_requests())) == (3, 2)

    orch.clock.now += timedelta(seconds=61)
    first.script(*FAILING)
    assert ask(orch).status_code == 200
    assert (len(first.chat_requests()), len(backup.chat_requests())) == (6, 3)
    assert [(c["failures"], c["seconds_left"]) for c in cooling(orch)] == [(2, 300)]

    orch.clock.now += timedelta(seconds=301)
    first.script(*FAILING)
    assert ask(orch).status_code == 200
    assert [(c["failures"], c["seconds_left"]) for c in cooling(orch)] == [(3, 1500)]
    assert metric(orch, "flotilla_model_cooldown_seconds", "fake:fake-model") == 1500


def test_the_two_upstreams_fail_in_turn_and_each_call_is_served_by_the_one_that_answers(
    launch: Launch, second: tuple[FakeUpstream, str]
) -> None:
    backup, url = second
    orch = launch(fleet(url))
    first = orch.upstream

    first.script(*FAILING)
    assert ask(orch).status_code == 200  # served by the second
    orch.clock.now += timedelta(seconds=61)
    first.script(Reply.say("first is back"))
    back = ask(orch)
    assert back.json()["choices"][0]["message"]["content"] == "first is back"
    assert cooling(orch) == []  # a model that answers is no longer cooling down
    assert len(backup.chat_requests()) == 1  # the first served: the second was not asked again

    first.script(*FAILING)
    backup.script(*[Reply.error(500, "second is down")] * 3)
    both_down = ask(orch)
    assert both_down.status_code == 502 and "second is down" in both_down.text
    assert {c["model"] for c in cooling(orch)} == {"fake:fake-model", "second:fake-model"}
    assert [row.status for row in orch.gateway.ledger.rows("alice")].count("error") == 1

    # Everything cools down: the model whose cooldown ends first is still tried.
    first.script(Reply.say("first again"))
    again = ask(orch)
    assert again.status_code == 200 and again.json()["choices"][0]["message"]["content"] == "first again"


def test_an_agent_without_a_chain_of_its_own_falls_back_to_the_fleet_fallback_model(
    launch: Launch, second: tuple[FakeUpstream, str]
) -> None:
    orch = launch(fleet(second[1]))
    orch.upstream.script(*FAILING)
    answered = orch.http(orch.tokens["bob"]).post(
        "/v1/chat/completions", json={"model": "fake:fake-model", "messages": HI}
    )
    assert answered.status_code == 200 and answered.json()["choices"][0]["message"]["content"].startswith(
        "[test model]"
    )
    agents = {a["name"]: a for a in orch.http(orch.tokens[OPERATOR]).get("/api/v1/fleet").json()["agents"]}
    assert (agents["alice"]["fallback"], agents["bob"]["fallback"]) == (["second:fake-model"], ["test"])


def test_calls_already_under_way_do_not_lengthen_a_cooldown() -> None:
    now = datetime(2030, 1, 1, tzinfo=UTC)
    cooldowns = Cooldowns(lambda: now)
    started = cooldowns.failed("p:m", "down")
    assert started is not None and started.seconds_left == 60
    assert cooldowns.failed("p:m", "down") is None  # a second call that was in flight
    assert [c.failures for c in cooldowns.report()] == [1]
    assert cooldowns.order([("p:m", 1), ("q:m", 2)]) == [("q:m", 2)]
    cooldowns.succeeded("p:m")
    assert cooldowns.report() == [] and cooldowns.order([("p:m", 1)]) == [("p:m", 1)]


def test_a_chain_naming_an_unknown_provider_or_a_bad_allow_list_is_refused_with_its_place(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(
        "version: 1\nfleet: chains\n"
        "llm:\n  providers:\n    local: {base_url: 'http://127.0.0.1:1/v1', extra_body: ['top k']}\n"
        "agents:\n  alice:\n    model: test\n    fallback: [local:small, nowhere:big]\n"
    )
    with pytest.raises(ConfigError) as refused:
        load_fleet(path)
    problems = "\n".join(str(problem) for problem in refused.value.problems)
    assert "llm.providers.local.extra_body" in problems
    path.write_text(path.read_text().replace("['top k']", "[top_k]"))
    with pytest.raises(ConfigError) as refused:
        load_fleet(path)
    [problem] = [str(problem) for problem in refused.value.problems]
    assert "agents.alice.fallback.1: model 'nowhere:big' uses unknown provider 'nowhere'" in problem

"""An agent that restarts in place (an idle release, a restore) loses none of the orchestrator's
requests: each is answered by the process that goes or waits for the one that comes, over a
real WebSocket to the real API."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_runtime.process.agent import AgentProcess
from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest
from agent_runtime.transport.channel import AgentChannel
from orchestrator.api.app import create_app
from orchestrator.services import Services
from orchestrator.testing.fake_fleet import fake_fleet_services
from orchestrator.testing.server import serve_app
from tests.agent_runtime.conftest import write_token

FLEET = "version: 1\nfleet: restarts\nagents:\n  alpha:\n    role: a\n"
CALLERS = 3
CALLS_EACH = 30


class SlowFacts:
    """Answers the operator's fact listings after a little work, off the reader thread."""

    def inline(self, request: AgentRequest) -> bool:
        return False

    def answer(self, request: AgentRequest) -> tuple[int, Any]:
        if request.op != AgentOp.MEMORY_LIST:
            return 200, None  # the workspace the orchestrator hands over on connecting
        time.sleep(0.05)
        return 200, {"facts": []}


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    with fake_fleet_services(tmp_path, FLEET) as built:
        yield built


@pytest.fixture
def base_url(services: Services) -> Iterator[str]:
    with serve_app(create_app(services)) as url:
        yield url


def channel_of(services: Services, base_url: str) -> AgentChannel:
    token = services.tokens.mint("alpha")
    channel = AgentChannel(base_url, lambda: token)
    channel.serve(SlowFacts())
    channel.open()
    return channel


def test_requests_during_a_restart_in_place_are_all_answered(services: Services, base_url: str) -> None:
    operator = {"authorization": f"Bearer {services.operator_token}"}
    answers: list[tuple[int, str]] = []
    first_answered = threading.Event()

    def ask_for_facts() -> None:
        with httpx.Client(base_url=base_url, headers=operator, timeout=30) as http:
            for _ in range(CALLS_EACH):
                response = http.get("/api/v1/agents/alpha/memory/facts")
                answers.append((response.status_code, response.text))
                first_answered.set()

    going = channel_of(services, base_url)
    callers = [threading.Thread(target=ask_for_facts) for _ in range(CALLERS)]
    for caller in callers:
        caller.start()
    assert first_answered.wait(10)
    going.retire()  # requests already on it are answered; later ones wait for the next process
    time.sleep(0.3)  # the new interpreter starting
    coming = channel_of(services, base_url)
    try:
        for caller in callers:
            caller.join(60)
        assert len(answers) == CALLERS * CALLS_EACH
        assert [a for a in answers if a[0] != 200] == []
    finally:
        coming.close()


def test_retiring_a_channel_that_never_opened_only_closes_it(services: Services, base_url: str) -> None:
    token = services.tokens.mint("alpha")
    channel = AgentChannel(base_url, lambda: token)
    started = time.monotonic()
    channel.retire()
    assert time.monotonic() - started < 1.0  # nothing to tell, nothing owed
    assert not services.agent_links.is_open("alpha")


def test_an_idle_release_retires_the_channel_before_the_new_interpreter(
    services: Services, base_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = Settings(orchestrator_url=base_url, agent="alpha", data_dir=tmp_path)
    write_token(tmp_path, services.tokens.mint("alpha"))
    process = AgentProcess(settings, threading.Event())
    process.client.channel.serve(SlowFacts())
    process.client.channel.open()
    deadline = time.monotonic() + 5
    while not services.agent_links.is_open("alpha") and time.monotonic() < deadline:
        time.sleep(0.02)
    seen_at_exec: list[bool] = []

    def execve(*_: object) -> None:
        seen_at_exec.append(services.agent_links.is_open("alpha"))

    monkeypatch.setattr("agent_runtime.process.agent.os.execve", execve)
    process.release()
    assert seen_at_exec == [False]  # the orchestrator knew before the process was replaced

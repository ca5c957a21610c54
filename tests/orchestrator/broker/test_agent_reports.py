"""What an agent reports is stored whatever its keys, and an agent's second channel closing does
not cut the orchestrator off from its first."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from broker_helpers import build_services, write_fleet

from agent_runtime.protocol import AgentOp, AgentRequest
from orchestrator.api.app import create_app
from orchestrator.running_agents.requests import AgentLinks, AgentUnreachable
from orchestrator.services import Services
from orchestrator.testing.server import serve_app


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Services, str]]:
    services = build_services(write_fleet(tmp_path / "fleet"))
    token = services.tokens.mint("alpha")
    with serve_app(create_app(services)) as url:
        yield url, services, token
    services.db.close()


def test_an_event_whose_data_has_the_keys_agent_and_type_is_stored_as_sent(
    served: tuple[str, Services, str],
) -> None:
    url, services, token = served
    data = {"agent": "beta", "type": "agent.restarted", "note": "mine"}
    with httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}) as alpha:
        answer = alpha.post("/agent/v1/events", json={"type": "agent.reported", "data": data})
    assert answer.status_code == 204, answer.text
    (event,) = [e for e in services.events.recent(10) if e.type == "agent.reported"]
    assert event.agent == "alpha" and event.data == data


class _Link:
    """One open link of an agent that answers every request at once."""

    def __init__(self, links: AgentLinks, agent: str, name: str) -> None:
        self.links, self.agent, self.name = links, agent, name

    async def send_request(self, request: AgentRequest) -> None:
        asyncio.get_running_loop().call_soon(
            self.links.answered, self.agent, request.request, 200, {"via": self.name}
        )


def test_requests_go_on_over_the_first_link_after_a_second_one_closes() -> None:
    async def scenario() -> None:
        links = AgentLinks()
        first, second = _Link(links, "alpha", "first"), _Link(links, "alpha", "second")
        links.attach("alpha", first)
        links.attach("alpha", second)
        assert (await links.request("alpha", AgentOp.MEMORY_LIST, {})).body == {"via": "second"}
        links.detach("alpha", second)
        assert links.is_open("alpha")
        assert (await links.request("alpha", AgentOp.MEMORY_LIST, {})).body == {"via": "first"}
        links.detach("alpha", first)
        with pytest.raises(AgentUnreachable):
            await links.request("alpha", AgentOp.MEMORY_LIST, {})

    asyncio.run(scenario())

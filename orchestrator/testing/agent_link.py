"""An agent's side of its link, for tests that need an agent to answer the orchestrator.

`connect_agent` dials a served orchestrator with the agent's real link (a WebSocket) and
answers with the agent's real `AgentService` (agent_runtime.AgentService), on a storage folder of
the agent's own. `link_agent` registers the same service in-process, without a WebSocket, for
tests driven through FastAPI's TestClient.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agent_runtime import AgentChannel, AgentService, Settings
from agent_runtime.protocol import AgentRequest
from orchestrator.running_agents.session import runtime_config
from orchestrator.services import Services


class InProcessAgent:
    def __init__(self, services: Services, agent: str, service: AgentService) -> None:
        self.services = services
        self.agent = agent
        self.service = service

    async def send_request(self, request: AgentRequest) -> None:
        status, body = await asyncio.to_thread(self.service.answer, request)
        self.services.agent_links.answered(self.agent, request.request, status, body)


@contextmanager
def connect_agent(services: Services, url: str, agent: str) -> Iterator[AgentService]:
    """The agent's link to the orchestrator at `url`, open and answering its requests."""
    token = services.tokens.mint(agent)
    settings = Settings(orchestrator_url=url, agent=agent, data_dir=services.paths.agent_storage(agent))
    config = runtime_config(services.fleet, agent)
    service = AgentService(settings, lambda: config, lambda: token)
    link = AgentChannel(url, lambda: token)
    link.serve(service)
    link.open()
    try:
        yield service
    finally:
        link.close()


def link_agent(portal: Any, services: Services, agent: str) -> AgentService:
    """Link `agent` while the app runs; `portal` is the TestClient's (it runs the app's loop)."""
    storage = services.paths.agent_storage(agent)
    for folder in ("workspace/learnings", "workspace/memory"):
        (storage / folder).mkdir(parents=True, exist_ok=True)
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent=agent, data_dir=storage)
    service = AgentService(settings, lambda: None, lambda: "")
    linked = InProcessAgent(services, agent, service)

    async def attach() -> None:
        services.agent_links.attach(agent, linked)

    portal.call(attach)
    return service

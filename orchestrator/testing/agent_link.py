"""An agent's request handling linked into the orchestrator in-process, for route tests.

`link_agent` registers an agent's real `AgentService` (agent_runtime.serving) in
`services.channels`, answering the orchestrator's requests without a WebSocket in between,
on a storage folder of the agent's own. The WebSocket itself is exercised by the channel tests.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_runtime.protocol import AgentRequest
from agent_runtime.serving import AgentService
from agent_runtime.settings import Settings
from orchestrator.services import Services


class InProcessAgent:
    def __init__(self, services: Services, agent: str, service: AgentService) -> None:
        self.services = services
        self.agent = agent
        self.service = service

    async def send_request(self, request: AgentRequest) -> None:
        status, body = await asyncio.to_thread(self.service.answer, request)
        self.services.channels.answered(self.agent, request.request, status, body)


def link_agent(portal: Any, services: Services, agent: str) -> AgentService:
    """Link `agent` while the app runs; `portal` is the TestClient's (it runs the app's loop)."""
    storage = services.paths.agent_storage(agent)
    for folder in ("workspace/learnings", "workspace/memory"):
        (storage / folder).mkdir(parents=True, exist_ok=True)
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent=agent, data_dir=storage)
    service = AgentService(settings, lambda: None, lambda: "")
    linked = InProcessAgent(services, agent, service)

    async def attach() -> None:
        services.channels.attach(agent, linked)

    portal.call(attach)
    return service

"""All the orchestrator-run tools of one agent, listed together and dispatched by name."""

from __future__ import annotations

from collections.abc import Sequence

from agent_runtime.protocol import OrchestratorToolCall, OrchestratorToolResult, OrchestratorTools
from orchestrator.host_tools.base import HostToolProvider, HostToolRefused


class HostToolCatalog:
    def __init__(self, agent: str, providers: Sequence[HostToolProvider]) -> None:
        self._agent = agent
        self._providers = list(providers)

    async def list(self) -> OrchestratorTools:
        offered = OrchestratorTools()
        for provider in self._providers:
            listed = await provider.list()
            offered.tools.extend(listed.tools)
            offered.problems.extend(listed.problems)
        return offered

    async def call(self, request: OrchestratorToolCall) -> OrchestratorToolResult:
        for provider in self._providers:
            if provider.owns(request.name):
                return await provider.call(request)
        raise HostToolRefused(
            f"{request.name} is not a tool of an HTTP MCP server of agent {self._agent}, nor a host "
            "tool enabled for it: declare it in the agent's tools: section of fleet.yaml"
        )

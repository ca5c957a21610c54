"""Routes an agent calls for the tools of the HTTP MCP servers the orchestrator reaches for it."""

from __future__ import annotations

from fastapi import APIRouter

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from orchestrator.api.deps import AgentDep, ServicesDep
from orchestrator.api.errors import ApiError
from orchestrator.approvals import ApprovalStore
from orchestrator.mcp_http import McpCallRefused, OrchestratorMcpCalls
from orchestrator.services import Services

router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])


def _calls(services: Services, agent: str) -> OrchestratorMcpCalls:
    fleet = services.fleet.config
    if agent not in fleet.agents:
        raise ApiError(404, "not_found", f"agent {agent!r} is no longer part of the fleet")
    approvals = ApprovalStore(services.db, services.events)
    return OrchestratorMcpCalls(agent, fleet.agents[agent].tools, approvals, services.events)


@router.get("/tools")
async def list_tools(services: ServicesDep, agent: AgentDep) -> OrchestratorTools:
    """The tools of this agent's HTTP MCP servers (allow-lists applied), and the servers not reached."""
    return await _calls(services, agent.name).list()


@router.post("/tools/call")
async def call_tool(
    body: OrchestratorToolCall, services: ServicesDep, agent: AgentDep
) -> OrchestratorToolResult:
    """Run one tool on its server. 403: not allowed (allow-list, approval); a failed call: ok=false."""
    try:
        return await _calls(services, agent.name).call(body)
    except McpCallRefused as refused:
        raise ApiError(403, "forbidden", str(refused)) from None

"""Routes an agent calls for the tools the orchestrator runs for it (`actions.list_tools`,
`actions.call_tool`)."""

from __future__ import annotations

from fastapi import APIRouter

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from orchestrator.api.agent import actions
from orchestrator.api.deps import AgentDep, ServicesDep

router = APIRouter(prefix=AGENT_API_PREFIX, tags=["agent"])


@router.get("/tools")
async def list_tools(services: ServicesDep, agent: AgentDep) -> OrchestratorTools:
    """The tools the orchestrator runs for this agent (allow-lists applied), and what was not reached."""
    return await actions.list_tools(services, agent.name)


@router.post("/tools/call")
async def call_tool(
    body: OrchestratorToolCall, services: ServicesDep, agent: AgentDep
) -> OrchestratorToolResult:
    """Run one tool. 403: not allowed (policy, allow-list, approval, budget); a failed call: ok=false."""
    return await actions.call_tool(services, agent.name, body)

"""The orchestrator's side of approval for a tool it runs: the call goes ahead only when the item
the agent waited on (found by the same key the agent derives) was approved for that tool."""

from __future__ import annotations

from agent_runtime.protocol import OrchestratorToolCall, approval_key, needs_approval
from orchestrator.approvals import ApprovalStore
from orchestrator.config.tools import ToolsConfig


def unapproved(
    approvals: ApprovalStore, agent: str, tools: ToolsConfig, call: OrchestratorToolCall
) -> str | None:
    """Why the call may not run yet (it needs an approval it does not have), or None."""
    asked_as = needs_approval(tools.approval_required(), call.name, call.arguments)
    if asked_as is None:
        return None
    item = approvals.find(agent, approval_key(call.item_id, call.name, call.arguments))
    if item is not None and item.state == "approved" and item.tool == asked_as:
        return None
    state = item.state if item is not None else "not asked for"
    return f"{call.name} needs an operator's approval for this call (approval: {state})"

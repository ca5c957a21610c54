"""The interface every family of orchestrator-run tools implements."""

from __future__ import annotations

from typing import Protocol

from agent_runtime.protocol import OrchestratorToolCall, OrchestratorToolResult, OrchestratorTools


class HostToolRefused(Exception):
    """The call is not allowed (not declared, outside the policy, not approved, over a budget).
    The message names the rule that refused it; it goes back to the agent as a 403."""


class HostToolProvider(Protocol):
    """One family of tools for one agent, built from that agent's fleet.yaml settings."""

    def owns(self, name: str) -> bool:
        """Whether a tool name offered to the model belongs to this family."""
        ...

    async def list(self) -> OrchestratorTools:
        """The tools offered to the agent, and problems (a server not reached) to report."""
        ...

    async def call(self, request: OrchestratorToolCall) -> OrchestratorToolResult:
        """Run one call; HostToolRefused when the policy refuses it, ok=false when it failed."""
        ...

"""HTTP MCP servers the orchestrator reaches for its agents (fleet.yaml `tools.mcp[].url`)."""

from orchestrator.mcp_http.calls import McpCallRefused, OrchestratorMcpCalls
from orchestrator.mcp_http.client import McpServerError, ServerTool

__all__ = ["McpCallRefused", "McpServerError", "OrchestratorMcpCalls", "ServerTool"]

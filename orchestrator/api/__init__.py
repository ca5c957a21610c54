"""The orchestrator's HTTP API: agent routes, the LLM gateway, the broker and operator routes."""

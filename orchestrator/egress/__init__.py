"""The `http_request` tool: HTTP requests the orchestrator makes for an agent, never from the
agent's network, under the agent's `tools.http` policy in fleet.yaml (allowed URLs and methods,
address ranges refused after DNS resolution, redirects re-checked, secrets filled in at the
moment of sending and redacted from answers, approval, a daily budget), each one recorded as an
event and counted in the metrics.

Imports the config, secrets, approvals and events; must not import the HTTP layer
(`orchestrator.api`), which builds the provider and hands it what it uses.
"""

from orchestrator.egress.provider import HttpRequestRefused, HttpRequestTool
from orchestrator.egress.records import HTTP_REFUSED, HTTP_REQUESTED

__all__ = ["HTTP_REFUSED", "HTTP_REQUESTED", "HttpRequestRefused", "HttpRequestTool"]

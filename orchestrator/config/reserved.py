"""Names an agent may not take: each one already means a principal, an author or a route.

An agent's name is used as a token principal, as the sender of its messages, as the author of
its workspace versions and as a path segment of the API. A name below would make one of those
ambiguous (an agent called `operator` would send messages as the operator), so `validate`
refuses it.
"""

from __future__ import annotations

RESERVED_AGENT_NAMES: dict[str, str] = {
    # Principals and senders.
    "operator": "the operator's principal and the sender of operator messages",
    "orchestrator": "the orchestrator itself",
    "scheduler": "the sender of heartbeat items",
    "fleet": "the fleet as a whole (budgets, costs, /api/v1/fleet)",
    # Authors recorded in workspace history.
    "agent": "a workspace version author",
    "system": "a workspace version author",
    "job": "a workspace version author",
    "external": "a workspace version author (edits made outside Flotilla)",
    "unknown": "a workspace version author",
    # Routes and surfaces served on the same port.
    "api": "the /api prefix",
    "gateway": "the LLM gateway",
    "dashboard": "the /dashboard route",
    "metrics": "the /metrics route",
    "events": "the /api/v1/events route",
    "docs": "the /docs route",
    "redoc": "the /redoc route",
    "health": "health checks",
    "static": "the dashboard's static files",
    "v1": "API version prefixes",
}


def reserved_reason(name: str) -> str | None:
    """Why `name` cannot name an agent, or None when it can."""
    return RESERVED_AGENT_NAMES.get(name.lower())

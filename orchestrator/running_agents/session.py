"""What an agent asks of the orchestrator about itself, by HTTP or over its link: the config it
runs with, its check-ins, and the inbox items it holds (progress and results).

A new agent process re-queues what its previous incarnation claimed; an idle check-in releases
claims lost on the way to it (see docs/architecture.md, at-least-once delivery).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from agent_runtime.protocol import (
    AgentRuntimeConfig,
    CheckIn,
    CheckInReply,
    McpServerSpec,
    ToolSettings,
    WorkResult,
)
from orchestrator.broker import Inbox
from orchestrator.config.egress import HTTP_TOOL
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.settings import runtime_hash
from orchestrator.config.windows import window_for
from orchestrator.errors import Gone, NotFound
from orchestrator.events import EventBus, EventType
from orchestrator.gateway.embedding import embedding_dimensions
from orchestrator.running_agents.health import HealthBoard

# The longest an inbox long-poll waits, whatever the agent asks.
MAX_WAIT_S = 30.0
# A claim this old, held while its agent reports being idle, was lost on the way to the agent.
STALE_CLAIM_S = 20.0


class AgentRemoved(Gone):
    """The agent is no longer part of the fleet (its unit may still be running)."""

    def __init__(self, message: str) -> None:
        super().__init__("agent_removed", message)


class ItemNotHeld(NotFound):
    """The agent holds no inbox item by that id."""

    def __init__(self, message: str) -> None:
        super().__init__("not_found", message)


def runtime_config(fleet: LoadedFleet, agent: str) -> AgentRuntimeConfig:
    config = fleet.config
    model = config.model_of(agent)
    return AgentRuntimeConfig(
        fleet=config.fleet,
        agent=agent,
        role=config.agents[agent].role,
        model=model,
        heartbeat_model=config.heartbeat_model_of(agent),
        context_window=config.context_window_of(agent, window_for(model)),
        embedding_model=config.embedding_model(),
        embedding_dimensions=embedding_dimensions(config),
        contradiction_similarity=config.llm.embedding.contradiction_similarity,
        talks_to=list(config.agents[agent].talks_to),
        max_frame_bytes=config.limits.bytes_of("channel_frame"),
        tools=tool_settings(fleet, agent),
        context=config.context_of(agent),
        memory_shared_writers=list(config.agents[agent].memory_shared_writers),
        config_hash=runtime_hash(fleet, agent),
    )


def tool_settings(fleet: LoadedFleet, agent: str) -> ToolSettings:
    tools = fleet.config.agents[agent].tools
    return ToolSettings(
        mcp=[
            McpServerSpec(
                name=server.name,
                command=list(server.command),
                env=dict(server.env),
                allow=list(server.allow) if server.allow is not None else None,
                timeout_s=server.timeout_s,
            )
            for server in tools.stdio_servers
            if server.command is not None
        ],
        orchestrator_mcp=[server.name for server in tools.http_servers],
        host_tools=[
            *([HTTP_TOOL] if tools.http is not None else []),
            *(["exec"] if tools.exec is not None else []),
            *(["notify"] if fleet.config.agents[agent].channels else []),
        ],
        approval_required=tools.approval_required(),
        approval_timeout_s=tools.approval_timeout_s,
    )


def _known(fleet: LoadedFleet, agent: str) -> None:
    if agent not in fleet.config.agents:
        raise AgentRemoved(f"agent {agent!r} is no longer part of the fleet")


def serve_config(
    fleet: LoadedFleet, health: HealthBoard, inbox: Inbox | None, agent: str, reload: bool = False
) -> AgentRuntimeConfig:
    """Asked once by each new agent process: what it claimed before it started is handed out again.

    A running process that reloads its config (`reload`) is the same incarnation: its check-ins
    and claims stand. Without an inbox (the orchestrator's core parts alone) there are no claims.
    """
    _known(fleet, agent)
    if not reload:
        health.mark_started(agent)
        if inbox is not None:
            inbox.requeue_claimed(agent)
    return runtime_config(fleet, agent)


def record_checkin(
    fleet: LoadedFleet,
    health: HealthBoard,
    inbox: Inbox | None,
    agent: str,
    body: CheckIn,
    memory_due: Callable[[str, datetime | None], None] | None = None,
    events: EventBus | None = None,
) -> CheckInReply:
    """`memory_due`: told when the agent's next memory job is due (the scheduler wakes a
    sleeping agent then). `events`: told once when the agent's disk fills, and when it has
    room again."""
    _known(fleet, agent)
    disk = health.record(agent, body)
    if events is not None and disk == "full":
        events.publish(EventType.AGENT_DISK_FULL, agent, free_bytes=body.disk_free_bytes)
    elif events is not None and disk == "freed":
        events.publish(EventType.AGENT_DISK_FREED, agent, free_bytes=body.disk_free_bytes)
    if memory_due is not None:
        memory_due(agent, body.memory_due_at)
    if inbox is not None and body.state == "idle" and body.current_item is None:
        inbox.requeue_stale_claims(agent, STALE_CLAIM_S)
    return CheckInReply(config_hash=runtime_hash(fleet, agent))


def own_item(inbox: Inbox, agent: str, item_id: str) -> None:
    if inbox.owner(item_id) != agent:
        raise ItemNotHeld(f"no inbox item {item_id}")


def add_progress(inbox: Inbox, agent: str, item_id: str, delta: str) -> None:
    """A part of the reply to an item the agent holds, streamed to whoever waits on it."""
    own_item(inbox, agent, item_id)
    inbox.add_progress(item_id, delta)


def complete(inbox: Inbox, agent: str, item_id: str, result: WorkResult) -> None:
    """Record the result of an item this agent holds (the ownership check is in the same update)."""
    if not inbox.complete(agent, item_id, result):
        raise ItemNotHeld(f"no inbox item {item_id}")


def fail_refused_result(inbox: Inbox, agent: str, item_id: str, reason: str) -> None:
    """A result that cannot be stored (over a limit): the item it answers fails with the reason,
    so nothing waits on it or hands it out again."""
    own_item(inbox, agent, item_id)
    inbox.fail(item_id, reason)

"""Everything an agent asks of the orchestrator, each action written once with its checks.

An action takes the services, the authenticated agent's name and a typed wire request, and
returns the typed result or raises a typed refusal (`orchestrator.errors.Refused` or
`ApiError`: a status, a code and a message). The transports are adapters over these functions:
the agent's link (`link.py`) turns a frame into a call and the refusal into a reply frame;
the HTTP routes (`routes.py`, `peers.py`, `tools.py`) turn a request into a call and the
refusal into a response. A check added here therefore holds on every transport.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from agent_runtime.protocol import (
    AgentEvent,
    AgentRuntimeConfig,
    ApprovalItem,
    ApprovalRequest,
    AskRequest,
    AskResult,
    CheckIn,
    CheckInReply,
    ForgottenCopies,
    InboxItem,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
    PeerInfo,
    RunRecord,
    TellRequest,
    TellResult,
    WorkResult,
    WorkspaceWrite,
    WorkspaceWriteResult,
)
from orchestrator.api.agent.tool_catalog import tool_catalog
from orchestrator.api.errors import ApiError
from orchestrator.api.fair_share import admit_event, admit_message, admit_run
from orchestrator.api.forget_copies import forget_copies
from orchestrator.api.limits import check_approval, check_event, check_payload, check_result, check_run
from orchestrator.approvals import ApprovalRules, ApprovalStore, UnknownApproval
from orchestrator.broker import MAX_TIMEOUT_S
from orchestrator.errors import RateLimited
from orchestrator.events import EventType
from orchestrator.host_tools import HostToolRefused
from orchestrator.running_agents import session
from orchestrator.services import Services
from orchestrator.workspaces import access as workspace_access

# Events an agent may report about itself; anything else is refused so agents cannot forge
# orchestrator events (restarts, budgets) on the bus.
AGENT_EVENT_TYPES = {
    EventType.COMPACTION_DONE.value,
    EventType.WORKSPACE_CHANGED.value,
    EventType.AGENT_REPORTED.value,
    "context.flushed",
    "context.warning",
    "context.pruned",
    "memory.mode",
    "memory.damaged",
    "maintenance.run",
    "mcp.started",
}


def approval_rules(services: Services, agent: str) -> ApprovalRules:
    """The agent's approval rules of the fleet in force, checked on what it sends."""
    config = services.fleet.config.agents.get(agent)
    required = config.tools.approval_required() if config is not None else []
    return ApprovalRules(agent, required, ApprovalStore(services.db, services.events))


# --- about itself ----------------------------------------------------------------------------


def serve_config(services: Services, agent: str, reload: bool) -> AgentRuntimeConfig:
    """`reload`: asked by a running process, which must not be taken for a new one."""
    return session.serve_config(services.fleet, services.health, services.inbox, agent, reload)


def check_in(services: Services, agent: str, checkin: CheckIn) -> CheckInReply:
    return session.record_checkin(
        services.fleet,
        services.health,
        services.inbox,
        agent,
        checkin,
        services.scheduler.memory_due.note,
        services.events,
    )


def report_event(services: Services, agent: str, event: AgentEvent) -> None:
    if event.type not in AGENT_EVENT_TYPES:
        allowed = ", ".join(sorted(AGENT_EVENT_TYPES))
        raise ApiError(422, "invalid_event", f"agents may not report {event.type!r}; allowed: {allowed}")
    check_event(services, event.data)
    admit_event(services, agent)
    services.events.publish_data(event.type, agent, event.data)


def record_run(services: Services, agent: str, record: RunRecord) -> None:
    """Store the record of one agent turn. The same record id again is harmless."""
    if record.agent != agent:
        raise ApiError(
            403, "forbidden", f"agent {agent!r} cannot post a run record for agent {record.agent!r}"
        )
    check_run(services, record)
    admit_run(services, agent)
    services.scheduler.record_turn(record)


# --- its inbox -------------------------------------------------------------------------------


async def claim_next(services: Services, agent: str, wait_s: float) -> InboxItem | None:
    """The next item, claimed within `wait_s` (capped), or None. The caller hands it to the agent
    or gives it back with `release`: a claimed item that never reaches the agent must not be lost."""
    item = await services.inbox.next(agent, min(wait_s, session.MAX_WAIT_S))
    if item is None:
        return None
    try:
        return services.snapshots.stamp(agent, item)
    except BaseException:
        services.inbox.release(item.id)
        raise


def release(services: Services, item: InboxItem) -> None:
    """A claimed item that did not reach its agent goes back in the queue."""
    services.inbox.release(item.id)


def add_progress(services: Services, agent: str, item_id: str, delta: str) -> None:
    session.add_progress(services.inbox, agent, item_id, delta)


def finish(services: Services, agent: str, item_id: str, result: WorkResult) -> None:
    """Record the result of an item this agent holds.

    A result over the payload limit is not stored: the item fails with the reason, so nothing
    waits on it or hands it out again, and the agent gets the 413.
    """
    try:
        check_result(services, result)
    except ApiError as refused:
        session.fail_refused_result(services.inbox, agent, item_id, refused.body.message)
        raise
    session.complete(services.inbox, agent, item_id, result)
    if services.browsers is not None:
        services.browsers.item_ended(agent, item_id)


# --- its peers -------------------------------------------------------------------------------


def list_peers(services: Services, agent: str) -> list[PeerInfo]:
    """The agents this agent may talk to, with the operations of the contract in force for each."""
    _check_member(services, agent)
    return services.broker.peers(agent)


async def ask(services: Services, agent: str, request: AskRequest) -> AskResult:
    """Ask a peer an operation and wait for its answer; broker refusals come back as `error`.
    403 when the operation needs an approval that no approved item gives."""
    if not 0 < request.timeout_s <= MAX_TIMEOUT_S:
        raise ApiError(
            422, "invalid_request", f"timeout_s must be more than 0 and at most {MAX_TIMEOUT_S:g} seconds"
        )
    check_payload(services, request)
    admit_message(services, agent, request)
    approval_rules(services, agent).check_ask(request)
    return await services.broker.ask(agent, request)


async def tell(services: Services, agent: str, request: TellRequest) -> TellResult:
    """403 when a tell needs an approval that no approved item gives."""
    check_payload(services, request)
    admit_message(services, agent, request)
    approval_rules(services, agent).check_tell(request)
    return await services.broker.tell(agent, request)


def _check_member(services: Services, agent: str) -> None:
    if agent not in services.fleet.config.agents:
        raise ApiError(404, "not_found", f"there is no agent named {agent!r} in this fleet")


# --- the tools the orchestrator runs for it --------------------------------------------------


async def list_tools(services: Services, agent: str) -> OrchestratorTools:
    """The tools the orchestrator runs for this agent (allow-lists applied), and what was not reached."""
    return await tool_catalog(services, agent).list()


async def call_tool(services: Services, agent: str, call: OrchestratorToolCall) -> OrchestratorToolResult:
    """Run one tool. 403: not allowed (policy, allow-list, approval, budget); a failed call: ok=false.
    Approval is checked here, for every tool the orchestrator runs, before any provider sees it."""
    approval_rules(services, agent).check_tool_call(call.name, call.arguments, call.item_id)
    try:
        return await tool_catalog(services, agent).call(call)
    except HostToolRefused as refused:
        raise ApiError(403, "forbidden", str(refused)) from None


# When an agent at its cap of undecided approval requests may try again (a decision frees one).
PENDING_RETRY_S = 30.0
# How often a wait for a decision looks again.
DECISION_POLL_S = 0.25


def request_approval(services: Services, agent: str, request: ApprovalRequest) -> ApprovalItem:
    """The approval item for this call (the same key answers with the same item). A new one is
    stored whole and announced with an event: its arguments are capped like a payload, it is
    charged to the agent's event rate, and an agent has at most `limits.pending_approvals`
    undecided."""
    store = ApprovalStore(services.db, services.events)
    known = store.find(agent, request.key)
    if known is not None:
        return known
    check_approval(services, request.arguments)
    cap = services.fleet.config.limits.pending_approvals
    if store.pending_count(agent) >= cap:
        raise RateLimited(
            "too_many_pending",
            f"agent {agent} has {cap} approval requests waiting for a decision, "
            f"the most limits.pending_approvals allows",
            PENDING_RETRY_S,
            [f"limit: limits.pending_approvals = {cap}"],
        )
    admit_event(services, agent)
    return store.request(agent, request)


async def await_decision(services: Services, agent: str, approval_id: str, wait_s: float) -> ApprovalItem:
    """The agent's approval item, once decided or after `wait_s` seconds (still pending then)."""
    store = ApprovalStore(services.db, services.events)
    deadline = asyncio.get_running_loop().time() + wait_s
    while True:
        try:
            item = store.get(approval_id, agent)
        except UnknownApproval as unknown:
            raise ApiError(404, "not_found", str(unknown)) from None
        if item.state != "pending" or asyncio.get_running_loop().time() >= deadline:
            return item
        await asyncio.sleep(DECISION_POLL_S)


# --- its workspace and memory ----------------------------------------------------------------


def write_workspace(services: Services, agent: str, name: str, write: WorkspaceWrite) -> WorkspaceWriteResult:
    """The agent's write, through the operator copy's one write path. The agent cannot write as
    the operator: anything but a maintenance job counts as the agent. Under an approval rule on
    `update_workspace` every write of the agent needs its approved item, whoever it claims to be
    (a job's write included: the agent names the author)."""
    access = services.workspaces.open(agent)
    canonical = workspace_access.canonical_identity(name)
    if canonical is not None:
        current = access.workspace.read(canonical)
        approval_rules(services, agent).check_workspace_write(canonical, write.content, current)
    author: Literal["agent", "job"] = "job" if write.author == "job" else "agent"
    return services.workspaces.write_file(access, name, write.content, write.reason, author, "agent")


async def forgotten(services: Services, agent: str, texts: list[str]) -> ForgottenCopies:
    """The model forgot these facts: the orchestrator's copies of them are rewritten. Charged
    as the event it publishes: each report rewrites rows of state.db."""
    admit_event(services, agent)
    return await forget_copies(services, agent, texts, asked_by_agent=True)

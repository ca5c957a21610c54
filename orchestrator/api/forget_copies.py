"""The orchestrator's own copies of forgotten facts, rewritten for the operator's forget (the
memory routes) and for the model's (the agent's `forgotten` frame) alike."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from agent_runtime.protocol import ForgottenCopies
from orchestrator.memory_access.forgetting import (
    forget_in_state,
    forget_in_workspace_versions,
    state_owners,
)
from orchestrator.services import Services

MEMORY_FORGOTTEN_EVENT = "memory.forgotten"


async def forget_copies(
    services: Services, agent: str, texts: Sequence[str], *, asked_by_agent: bool
) -> ForgottenCopies:
    """Rewrite the kept workspace versions and the agent's rows in state.db that state one of
    the texts; an event says how many (never the texts)."""
    texts = [text for text in texts if text.strip()]
    if not texts:
        return ForgottenCopies(versions=0, rows=0)
    workspace = services.workspaces.open(agent).workspace
    versions = await asyncio.to_thread(forget_in_workspace_versions, workspace, texts)
    owners = state_owners(
        services.inbox, services.scheduler.runs, services.events, asked_by_agent=asked_by_agent
    )
    rows = await asyncio.to_thread(forget_in_state, owners, agent, texts)
    if rows:
        await asyncio.to_thread(services.db.truncate_wal)
    copies = ForgottenCopies(versions=versions, rows=rows)
    services.events.publish(
        MEMORY_FORGOTTEN_EVENT,
        agent,
        by="agent" if asked_by_agent else "operator",
        **copies.model_dump(),
    )
    return copies

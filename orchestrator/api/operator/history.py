"""`GET /api/v1/agents/{agent}/history`: the agent's recent turns, for `flotilla history`.

    GET /api/v1/agents/{agent}/history?limit=20            the last 20 turns
    GET /api/v1/agents/{agent}/history?after=MESSAGE_ID    what was logged since (to follow)

Operator token only. The messages are asked of the agent over its link; the run records and
context events come from the orchestrator's own state.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Query

from agent_runtime.protocol import MAX_TURNS, AgentOp, TranscriptPage, TranscriptQuery
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.running_agents.transcripts import Transcript, build_transcript
from orchestrator.scheduler.runs import RunStore

router = APIRouter(prefix="/api/v1/agents/{agent}", tags=["history"])

# Run records and events read to annotate a page: enough for the turns a page can hold.
RUNS_PER_TURN = 4
EVENTS_READ = 1000


@router.get("/history")
async def agent_history(
    agent: str,
    _: OperatorDep,
    services: ServicesDep,
    limit: Annotated[int, Query(ge=1, le=MAX_TURNS)] = 20,
    after: Annotated[str | None, Query(max_length=64)] = None,
) -> Transcript:
    """The agent's turns: messages, tool calls and results, model, tokens, cost, duration and
    the context's flushes and compactions."""
    query = TranscriptQuery(turns=limit, after=after)
    page = await services.asker.ask(agent, AgentOp.HISTORY_READ, query.model_dump(), TranscriptPage)

    def annotate() -> Transcript:
        runs = RunStore(services.db).recent(agent, limit=limit * RUNS_PER_TURN + 20, kind="turn")
        events = services.events.recent(limit=EVENTS_READ, agent=agent)
        return build_transcript(agent, page, runs, events, following=after is not None)

    return await asyncio.to_thread(annotate)

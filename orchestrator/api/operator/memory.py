"""Operator routes over an agent's memory: list, search, add, edit and forget facts, and
settle contradictions. Operator token only.

    GET    /api/v1/agents/{agent}/memory/status
    GET    /api/v1/agents/{agent}/memory/facts?status=active&category=&source=&scope=&limit=&offset=
    POST   /api/v1/agents/{agent}/memory/facts                 FactCreate -> SaveResult
    GET    /api/v1/agents/{agent}/memory/facts/{id}            -> FactDetail (with its versions)
    PUT    /api/v1/agents/{agent}/memory/facts/{id}            FactEdit -> SaveResult
    DELETE /api/v1/agents/{agent}/memory/facts/{id}?with_restatements=false  -> ForgetResult
    GET    /api/v1/agents/{agent}/memory/search?q=&k=          -> MemorySearchResult
    GET    /api/v1/agents/{agent}/memory/history?q=&k=&as_of=  -> MemoryHistoryResult (past versions too)
    GET    /api/v1/agents/{agent}/memory/contradictions?status=pending
    POST   /api/v1/agents/{agent}/memory/contradictions/{id}/resolve   {"keep": "old"|"new"}
    GET    /api/v1/agents/{agent}/memory/jobs                  -> MemoryJobs (run records, checkpoints)
    POST   /api/v1/agents/{agent}/memory/jobs/run              {"job": "review"} -> MemoryJobRun
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from agent_runtime.memory import (
    Contradiction,
    FactSource,
    MemoryStatus,
    SaveResult,
)
from agent_runtime.protocol import AgentOp, FreshStoreAccepted, MemoryJobRun, MemoryJobs
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.api.forget_copies import forget_copies
from orchestrator.memory_access.access import ask_memory
from orchestrator.memory_access.models import (
    ContradictionList,
    FactCreate,
    FactDetail,
    FactEdit,
    FactList,
    ForgetResult,
    MemoryHistoryResult,
    MemorySearchResult,
    ResolveContradiction,
    RunJob,
)
from orchestrator.services import Services

router = APIRouter(prefix="/api/v1/agents/{agent}/memory", tags=["memory"])

StatusFilter = Literal["active", "superseded", "forgotten", "all"]
ContradictionFilter = Literal["pending", "resolved", "dismissed", "all"]


@router.get("/status")
async def memory_status(agent: str, _: OperatorDep, services: ServicesDep) -> MemoryStatus:
    """Counts, the search mode and the embedding model of the agent's memory."""
    return await ask_memory(services.asker, agent, AgentOp.MEMORY_STATUS, MemoryStatus)


@router.get("/facts")
async def list_facts(
    agent: str,
    _: OperatorDep,
    services: ServicesDep,
    status: StatusFilter = "active",
    category: str | None = None,
    source: FactSource | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
    scope: Annotated[
        str | None,
        Query(
            description="only this scope: '' the shared facts, or a person's principal (person:CHANNEL:USER)"
        ),
    ] = None,
) -> FactList:
    """Facts, newest first, each with its scope."""
    return await ask_memory(
        services.asker,
        agent,
        AgentOp.MEMORY_LIST,
        FactList,
        status=status,
        category=category,
        source=source.value if source else None,
        limit=limit,
        offset=offset,
        scope=scope,
    )


@router.post("/facts")
async def add_fact(agent: str, body: FactCreate, _: OperatorDep, services: ServicesDep) -> SaveResult:
    """Teach the agent a fact as the operator (it outranks anything the agent inferred)."""
    return await ask_memory(services.asker, agent, AgentOp.MEMORY_ADD, SaveResult, **body.model_dump())


@router.get("/facts/{fact_id}")
async def get_fact(agent: str, fact_id: int, _: OperatorDep, services: ServicesDep) -> FactDetail:
    return await ask_memory(services.asker, agent, AgentOp.MEMORY_GET, FactDetail, id=fact_id)


@router.put("/facts/{fact_id}")
async def edit_fact(
    agent: str, fact_id: int, body: FactEdit, _: OperatorDep, services: ServicesDep
) -> SaveResult:
    """Correct a fact: the correction is a new version (source operator); the old one is history."""
    return await ask_memory(
        services.asker, agent, AgentOp.MEMORY_EDIT, SaveResult, id=fact_id, **body.model_dump()
    )


@router.delete("/facts/{fact_id}")
async def forget_fact(
    agent: str, fact_id: int, _: OperatorDep, services: ServicesDep, with_restatements: bool = False
) -> ForgetResult:
    """Forget a fact and its older versions (with `with_restatements`, the facts restating it
    too): erased, out of search, and barred from coming back. The agent rewrites every copy in
    its storage; the orchestrator's copy of its workspace loses the text from its kept versions,
    and its rows in state.db (inbox, runs, events) lose the sentences that state it."""
    texts, result = await _forget_one(services, agent, fact_id)
    if with_restatements:
        # One at a time, so the orchestrator learns each restatement's text before it goes.
        for other in result.restatements:
            more_texts, more = await _forget_one(services, agent, other)
            texts += more_texts
            result.forgotten += more.forgotten
        result.restatements = []
    if result.forgotten and texts:
        await forget_copies(services, agent, texts, asked_by_agent=False)
    return result


async def _forget_one(services: Services, agent: str, fact_id: int) -> tuple[list[str], ForgetResult]:
    """The texts of the fact and its versions, then the agent's forget of it."""
    detail = await ask_memory(services.asker, agent, AgentOp.MEMORY_GET, FactDetail, id=fact_id)
    texts = [fact.text for fact in detail.history if fact.text]
    return texts, await ask_memory(services.asker, agent, AgentOp.MEMORY_FORGET, ForgetResult, id=fact_id)


@router.get("/search")
async def search_memory(
    agent: str,
    _: OperatorDep,
    services: ServicesDep,
    q: Annotated[str, Query(min_length=1)],
    k: Annotated[int, Query(ge=1, le=100)] = 10,
) -> MemorySearchResult:
    """Facts and episodes matching the query, ranked as the agent ranks them (accesses not counted)."""
    return await ask_memory(services.asker, agent, AgentOp.MEMORY_SEARCH, MemorySearchResult, q=q, k=k)


@router.get("/history")
async def search_memory_history(
    agent: str,
    _: OperatorDep,
    services: ServicesDep,
    q: Annotated[str, Query(min_length=1)],
    k: Annotated[int, Query(ge=1, le=100)] = 10,
    as_of: Annotated[
        datetime | None, Query(description="Only the versions current at this time (ISO 8601; no zone: UTC)")
    ] = None,
) -> MemoryHistoryResult:
    """Facts matching the query with their superseded versions and validity intervals."""
    moment = as_of.isoformat() if as_of is not None else None
    return await ask_memory(
        services.asker, agent, AgentOp.MEMORY_HISTORY, MemoryHistoryResult, q=q, k=k, as_of=moment
    )


@router.get("/contradictions")
async def list_contradictions(
    agent: str, _: OperatorDep, services: ServicesDep, status: ContradictionFilter = "pending"
) -> ContradictionList:
    """Facts of lower precedence that disputed a stored one and wait for the operator."""
    return await ask_memory(
        services.asker, agent, AgentOp.MEMORY_CONTRADICTIONS, ContradictionList, status=status
    )


@router.post("/contradictions/{contradiction_id}/resolve")
async def resolve_contradiction(
    agent: str, contradiction_id: int, body: ResolveContradiction, _: OperatorDep, services: ServicesDep
) -> Contradiction:
    """keep=old: the stored fact stays and the claim is barred; keep=new: the claim replaces it."""
    return await ask_memory(
        services.asker, agent, AgentOp.MEMORY_RESOLVE, Contradiction, id=contradiction_id, keep=body.keep
    )


@router.get("/jobs")
async def memory_jobs(agent: str, _: OperatorDep, services: ServicesDep) -> MemoryJobs:
    """The memory jobs' run records (trigger, model, outcome, changes), newest first, and their
    checkpoints: the memory store's maintenance jobs, and the checkpoint strategy's jobs."""
    return await ask_memory(services.asker, agent, AgentOp.MEMORY_JOBS, MemoryJobs)


@router.post("/jobs/run")
async def run_memory_job(agent: str, body: RunJob, _: OperatorDep, services: ServicesDep) -> MemoryJobRun:
    """Run one memory job now, in the agent, and return its run record."""
    return await ask_memory(services.asker, agent, AgentOp.MEMORY_RUN, MemoryJobRun, job=body.job)


@router.post("/accept-fresh")
async def accept_fresh_store(agent: str, _: OperatorDep, services: ServicesDep) -> FreshStoreAccepted:
    """Keep the store that replaced the agent's damaged memory.db (instead of restoring a
    backup): the agent searches it in full again from its next start."""
    return await ask_memory(services.asker, agent, AgentOp.MEMORY_ACCEPT_FRESH, FreshStoreAccepted)

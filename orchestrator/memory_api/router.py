"""Operator routes over an agent's memory: list, search, add, edit and forget facts, and
settle contradictions. Operator token only.

    GET    /api/v1/agents/{agent}/memory/status
    GET    /api/v1/agents/{agent}/memory/facts?status=active&category=&source=&limit=&offset=
    POST   /api/v1/agents/{agent}/memory/facts                 FactCreate -> SaveResult
    GET    /api/v1/agents/{agent}/memory/facts/{id}            -> FactDetail (with its versions)
    PUT    /api/v1/agents/{agent}/memory/facts/{id}            FactEdit -> SaveResult
    DELETE /api/v1/agents/{agent}/memory/facts/{id}            -> ForgetResult
    GET    /api/v1/agents/{agent}/memory/search?q=&k=          -> MemorySearchResult
    GET    /api/v1/agents/{agent}/memory/contradictions?status=pending
    POST   /api/v1/agents/{agent}/memory/contradictions/{id}/resolve   {"keep": "old"|"new"}
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query

from agent_runtime.memory.models import (
    Contradiction,
    ContradictionStatus,
    FactSource,
    FactStatus,
    MemoryMode,
    MemoryStatus,
    SaveOutcome,
    SaveResult,
)
from agent_runtime.memory.store import MemoryStore
from orchestrator.api.deps import OperatorDep, ServicesDep
from orchestrator.memory_api.access import open_memory, require
from orchestrator.memory_api.models import (
    ContradictionList,
    FactCreate,
    FactDetail,
    FactEdit,
    FactList,
    ForgetResult,
    MemorySearchResult,
    ResolveContradiction,
)

router = APIRouter(prefix="/api/v1/agents/{agent}/memory", tags=["memory"])

StatusFilter = Literal["active", "superseded", "forgotten", "all"]
ContradictionFilter = Literal["pending", "resolved", "dismissed", "all"]


def _log_saved(store: MemoryStore, result: SaveResult) -> SaveResult:
    if result.outcome in (SaveOutcome.SAVED, SaveOutcome.SUPERSEDED) and result.fact_id is not None:
        fact = store.get(result.fact_id)
        if fact is not None and store.fact_log is not None:
            store.fact_log.append(fact)
    return result


@router.get("/status")
def memory_status(agent: str, _: OperatorDep, services: ServicesDep) -> MemoryStatus:
    """Counts, the search mode and the embedding model of the agent's memory. The mode is the
    one the agent reports (the host opens the file without the agent's embedder)."""
    with open_memory(services, agent) as store:
        status = require(store, agent).status()
    sighting = services.health.last(agent)
    reported = sighting.checkin.memory_mode if sighting is not None else "unknown"
    if reported in (MemoryMode.HYBRID.value, MemoryMode.KEYWORD.value):
        status = status.model_copy(update={"mode": MemoryMode(reported)})
    if status.mode is MemoryMode.HYBRID:
        status = status.model_copy(update={"embedding_model": services.fleet.config.embedding_model()})
    return status


@router.get("/facts")
def list_facts(
    agent: str,
    _: OperatorDep,
    services: ServicesDep,
    status: StatusFilter = "active",
    category: str | None = None,
    source: FactSource | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> FactList:
    """Facts, newest first."""
    with open_memory(services, agent) as store:
        if store is None:
            return FactList(facts=[])
        wanted = None if status == "all" else FactStatus(status)
        return FactList(
            facts=store.list_facts(
                status=wanted, category=category, source=source, limit=limit, offset=offset
            )
        )


@router.post("/facts")
def add_fact(agent: str, body: FactCreate, _: OperatorDep, services: ServicesDep) -> SaveResult:
    """Teach the agent a fact as the operator (it outranks anything the agent inferred)."""
    with open_memory(services, agent) as store:
        found = require(store, agent)
        result = found.save(
            body.text, category=body.category, subject=body.subject, source=FactSource.OPERATOR
        )
        return _log_saved(found, result)


@router.get("/facts/{fact_id}")
def get_fact(agent: str, fact_id: int, _: OperatorDep, services: ServicesDep) -> FactDetail:
    with open_memory(services, agent) as store:
        history = require(store, agent).history(fact_id)
        return FactDetail(fact=next(f for f in history if f.id == fact_id), history=history)


@router.put("/facts/{fact_id}")
def edit_fact(agent: str, fact_id: int, body: FactEdit, _: OperatorDep, services: ServicesDep) -> SaveResult:
    """Correct a fact: the correction is a new version (source operator); the old one is history."""
    with open_memory(services, agent) as store:
        found = require(store, agent)
        return _log_saved(found, found.edit(fact_id, body.text, body.category))


@router.delete("/facts/{fact_id}")
def forget_fact(agent: str, fact_id: int, _: OperatorDep, services: ServicesDep) -> ForgetResult:
    """Forget a fact and its older versions: erased, out of search, and barred from coming back."""
    with open_memory(services, agent) as store:
        return ForgetResult(forgotten=require(store, agent).forget(fact_id, "forgotten by the operator"))


@router.get("/search")
def search_memory(
    agent: str,
    _: OperatorDep,
    services: ServicesDep,
    q: Annotated[str, Query(min_length=1)],
    k: Annotated[int, Query(ge=1, le=100)] = 10,
) -> MemorySearchResult:
    """Facts and episodes matching the query, ranked as the agent ranks them (accesses not counted)."""
    with open_memory(services, agent) as store:
        if store is None:
            return MemorySearchResult(mode=MemoryMode.KEYWORD, facts=[], episodes=[])
        return MemorySearchResult(
            mode=store.embeddings.mode,
            facts=store.search(q, k, record_access=False),
            episodes=store.search_episodes(q, min(k, 5)),
        )


@router.get("/contradictions")
def list_contradictions(
    agent: str, _: OperatorDep, services: ServicesDep, status: ContradictionFilter = "pending"
) -> ContradictionList:
    """Facts of lower precedence that disputed a stored one and wait for the operator."""
    with open_memory(services, agent) as store:
        if store is None:
            return ContradictionList(contradictions=[])
        wanted = None if status == "all" else ContradictionStatus(status)
        return ContradictionList(contradictions=store.contradictions(wanted))


@router.post("/contradictions/{contradiction_id}/resolve")
def resolve_contradiction(
    agent: str, contradiction_id: int, body: ResolveContradiction, _: OperatorDep, services: ServicesDep
) -> Contradiction:
    """keep=old: the stored fact stays and the claim is barred; keep=new: the claim replaces it."""
    with open_memory(services, agent) as store:
        return require(store, agent).resolve(contradiction_id, body.keep)

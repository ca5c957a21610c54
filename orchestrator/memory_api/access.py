"""Opening an agent's memory.db on the host, on behalf of the operator.

The operator works on the same file as the agent (`.flotilla/agents/<name>/memory.db`, the
agent's `/data/memory.db`), through the same `MemoryStore`, so precedence, barriers and
supersession apply to operator changes too; WAL mode lets both sides use the file at once.

Embeddings for operator searches and edits: with the fleet's `test` embedding model the host
computes the same deterministic vectors the gateway serves. With a real model there is no
embedder here yet and the store runs keyword-only for the operator (existing vectors are
kept, not rebuilt); facts the operator adds get their vectors from the agent's backfill.
`OPERATOR_EMBEDDERS` is where a gateway-backed embedder would be plugged in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from agent_runtime.memory import sqlite
from agent_runtime.memory.contradictions import ContradictionNotFound
from agent_runtime.memory.embeddings import DeterministicEmbedder, Embedder
from agent_runtime.memory.factlog import FactLog
from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.store import FactNotFound, MemoryInputError, MemoryStore
from agent_runtime.memory.vectors import VectorError
from orchestrator.api.errors import ApiError
from orchestrator.config.models import TEST_MODEL, EmbeddingConfig
from orchestrator.gateway.embedding import TEST_EMBEDDING_DIMENSIONS, embedding_dimensions
from orchestrator.services import Services

MEMORY_DB = "memory.db"

EmbedderFactory = Callable[[EmbeddingConfig], Embedder | None]


def _test_embedder(config: EmbeddingConfig) -> Embedder | None:
    return DeterministicEmbedder(config.dimensions or TEST_EMBEDDING_DIMENSIONS)


OPERATOR_EMBEDDERS: dict[str, EmbedderFactory] = {TEST_MODEL: _test_embedder}


def memory_path(services: Services, agent: str) -> Path:
    if agent not in services.fleet.config.agents:
        known = ", ".join(sorted(services.fleet.config.agents))
        raise ApiError(404, "unknown_agent", f"no agent named {agent!r} in this fleet; agents: {known}")
    return services.paths.agent_dir(agent) / MEMORY_DB


@contextmanager
def open_memory(services: Services, agent: str) -> Iterator[MemoryStore | None]:
    """The agent's store, or None when the agent has no memory.db yet (nothing is created)."""
    path = memory_path(services, agent)
    if not path.exists():
        yield None
        return
    fleet = services.fleet.config
    embedding = fleet.llm.embedding
    model = fleet.embedding_model()
    factory = OPERATOR_EMBEDDERS.get(model or "")
    config = MemoryConfig(
        dimensions=embedding_dimensions(fleet) or TEST_EMBEDDING_DIMENSIONS,
        embedding_model=model,
        reindex_on_model_change=False,
    )
    try:
        store = MemoryStore(
            path,
            embedder=factory(embedding) if factory else None,
            config=config,
            fact_log=FactLog(services.paths.workspace(agent)),
        )
    except (sqlite.Error, OSError) as failed:
        raise ApiError(503, "unavailable", f"cannot open {agent}'s memory: {failed}") from None
    try:
        with translated_errors(agent):
            yield store
    finally:
        store.close()


def require(store: MemoryStore | None, agent: str) -> MemoryStore:
    if store is None:
        raise ApiError(
            404, "not_found", f"agent {agent!r} has no memory yet (memory.db is created on its first start)"
        )
    return store


@contextmanager
def translated_errors(agent: str) -> Iterator[None]:
    try:
        yield
    except FactNotFound as missing:
        raise ApiError(404, "not_found", f"{agent}: {missing}") from None
    except ContradictionNotFound as missing:
        raise ApiError(404, "not_found", f"{agent}: {missing}") from None
    except (MemoryInputError, VectorError) as bad:
        raise ApiError(422, "invalid_request", str(bad)) from None
    except sqlite.OperationalError as failed:
        raise ApiError(503, "unavailable", f"{agent}'s memory is busy or unreadable: {failed}") from None

"""The agent's long-term memory: facts and episodes in one SQLite file, searched by vector and
keyword; the workspace's markdown searched with BM25; tools for the model; maintenance jobs.

    store = MemoryStore(data / "memory.db", embedder=GatewayEmbedder(url, token, model, dims),
                        config=MemoryConfig(dimensions=dims, embedding_model=model),
                        fact_log=FactLog(data / "workspace"))
    tools = MemoryTools(store, WorkspaceIndex(data / "workspace"))
    runner = MaintenanceRunner(store, data, complete=model_call, model=name)
"""

from agent_runtime.memory.bm25 import FileHit, WorkspaceIndex
from agent_runtime.memory.contradictions import ContradictionNotFound
from agent_runtime.memory.embeddings import (
    DeterministicEmbedder,
    Embedder,
    EmbeddingError,
    EmbeddingService,
    GatewayEmbedder,
    search_floor,
)
from agent_runtime.memory.factlog import FactLog, is_fact_line
from agent_runtime.memory.forgetting import forget_in_versions, scrub_forgotten
from agent_runtime.memory.jobs import JobRun, JobSchedule, Outcome
from agent_runtime.memory.maintenance import MaintenanceRunner, list_runs
from agent_runtime.memory.models import (
    BLENDED_EMBEDDING_MODEL,
    LOCAL_EMBEDDING_MODEL,
    MULTILINGUAL_EMBEDDING_MODEL,
    Contradiction,
    ContradictionStatus,
    Episode,
    EpisodeHit,
    Fact,
    FactHit,
    FactSource,
    FactStatus,
    FactVersion,
    ForgetResult,
    MemoryConfig,
    MemoryMode,
    MemoryStatus,
    SaveOutcome,
    SaveResult,
)
from agent_runtime.memory.store import FactNotFound, MemoryInputError, MemoryStore
from agent_runtime.memory.tools import MemoryTools, ToolInputError

__all__ = [
    "BLENDED_EMBEDDING_MODEL",
    "LOCAL_EMBEDDING_MODEL",
    "MULTILINGUAL_EMBEDDING_MODEL",
    "Contradiction",
    "ContradictionNotFound",
    "ContradictionStatus",
    "DeterministicEmbedder",
    "Embedder",
    "EmbeddingError",
    "EmbeddingService",
    "Episode",
    "EpisodeHit",
    "Fact",
    "FactHit",
    "FactLog",
    "FactNotFound",
    "FactSource",
    "FactStatus",
    "FactVersion",
    "FileHit",
    "ForgetResult",
    "GatewayEmbedder",
    "JobRun",
    "JobSchedule",
    "MaintenanceRunner",
    "MemoryConfig",
    "MemoryInputError",
    "MemoryMode",
    "MemoryStatus",
    "MemoryStore",
    "MemoryTools",
    "Outcome",
    "SaveOutcome",
    "SaveResult",
    "ToolInputError",
    "WorkspaceIndex",
    "forget_in_versions",
    "is_fact_line",
    "list_runs",
    "scrub_forgotten",
    "search_floor",
]

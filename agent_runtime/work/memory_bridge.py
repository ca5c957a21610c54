"""The seam between the runtime and the memory store (`agent_runtime.memory`).

The runtime needs three things from it: a `FactStore` for flushed facts and compaction
episodes, the memory tools for the model, and the mode it runs in (hybrid or keyword) for
check-ins. Without a usable store (no sqlite-vec driver, an unreadable database) the agent
keeps working with MEMORY.md alone, and says so in its log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_runtime.process.disk_space import is_disk_full
from agent_runtime.process.settings import Settings
from agent_runtime.process.state import MemoryMode
from agent_runtime.process.storage_check import fresh_store_of
from agent_runtime.protocol import (
    DEFAULT_SHARED_WRITERS,
    AgentRuntimeConfig,
    InboxItem,
    ItemKind,
    item_source,
)
from agent_runtime.safety.redaction import redact
from agent_runtime.tools.registry import Handler, Tool, ToolError
from agent_runtime.work.facts import FactStoreError

if TYPE_CHECKING:
    from agent_runtime.memory.embeddings import GatewayEmbedder
    from agent_runtime.memory.provenance import PersonWords
    from agent_runtime.memory.store import MemoryStore
    from agent_runtime.memory.tools import MemoryTools

log = logging.getLogger(__name__)

MEMORY_DB = "memory.db"
# The vector table's size when there is no embedding model to ask (no vector is ever stored).
DEFAULT_DIMENSIONS = 1536
TEST_MODEL = "test"
TokenSource = Callable[[], str]
Complete = Callable[[str], str]


class StoreFacts:
    """Adapts the memory store to the context manager's `FactStore`."""

    def __init__(self, store: MemoryStore, tools: MemoryTools) -> None:
        from agent_runtime.memory import sqlite

        self.store = store
        self.tools = tools
        self._failures: tuple[type[BaseException], ...] = (sqlite.Error, ValueError, OSError)

    def save_facts(self, facts: Sequence[str], turn_ids: Sequence[str]) -> None:
        for fact in facts:
            try:
                self.tools.memory_save(fact, source="extracted", turn_ids=list(turn_ids))
            except self._failures as failed:
                raise FactStoreError(f"fact not stored ({fact[:60]!r}): {failed}") from None

    def add_episode(self, start: str, end: str, turn_ids: Sequence[str], summary: str) -> None:
        try:
            self.store.add_episode(start, end, turn_ids, summary)
        except self._failures as failed:
            raise FactStoreError(f"episode not stored: {failed}") from None


class ScopedFacts:
    """The facts flushed from a person's own conversation, saved in that person's scope (found
    only from their conversation). Its compacted stretches are not stored as episodes: episodes
    are searched from every conversation, so the summary stays in the person's context alone."""

    def __init__(self, store: MemoryStore, scope: str, failures: tuple[type[BaseException], ...]) -> None:
        self.store = store
        self.scope = scope
        self._failures = failures

    def save_facts(self, facts: Sequence[str], turn_ids: Sequence[str]) -> None:
        for fact in facts:
            try:
                self.store.save(fact, source="extracted", turn_ids=list(turn_ids), scope=self.scope)
            except self._failures as failed:
                raise FactStoreError(f"fact not stored ({fact[:60]!r}): {failed}") from None

    def add_episode(self, start: str, end: str, turn_ids: Sequence[str], summary: str) -> None:
        return None


@dataclass
class MemoryBridge:
    store: StoreFacts | None = None
    tools: list[Tool] = field(default_factory=list)
    memory_store: Any = None
    maintenance: Any = None
    people: PersonWords | None = None
    memory_tools: Any = None
    shared_writers: tuple[str, ...] = DEFAULT_SHARED_WRITERS
    """Senders whose items may save to the shared scope (fleet.yaml memory_shared_writers)."""
    failures: tuple[type[BaseException], ...] = (OSError,)
    salient: str = ""
    """The salient-facts block for the prompt, as of the last refresh that changed it."""
    _salient_basis: tuple[str, int] | None = None

    def on_forget(self, forgotten: Callable[[list[str]], object]) -> None:
        """After a forget, call `forgotten` with the texts forgotten (the runtime rewrites the
        other copies of them, `erasure`), and recompute the salient facts for the next item."""
        if self.memory_store is None:
            return

        def listener(texts: list[str]) -> None:
            self._salient_basis = None
            forgotten(texts)

        self.memory_store.forget_listeners.append(listener)

    def refresh_salient(self, memory_file: str, epoch: int, budget_tokens: int | None = None) -> str:
        """The salient-facts block (facts MEMORY.md already states left out), recomputed only
        when the prompt's prefix changes anyway from the memory block on: MEMORY.md changed, or
        the context was compacted (`epoch`, the compaction count). In between it stays as it
        was, so a fact saved now does not break the cached prefix of every later request; it is
        in the conversation meanwhile."""
        if self.memory_store is None:
            return ""
        basis = (memory_file, epoch)
        if basis == self._salient_basis:
            return self.salient
        from agent_runtime.memory.salience import DEFAULT_BUDGET_TOKENS, salient_block

        budget = DEFAULT_BUDGET_TOKENS if budget_tokens is None else budget_tokens
        try:
            self.salient = salient_block(self.memory_store, budget, memory_file.splitlines())
            self._salient_basis = basis
        except self.failures as failed:
            log.warning("salient facts not refreshed: %s", failed)
        return self.salient

    def shares(self, principal: str) -> bool:
        """True when this sender's conversation may write the shared scope (the admission rule)."""
        return item_source(principal) in self.shared_writers

    def person_facts(self, scope: str) -> StoreFacts | ScopedFacts | None:
        """Where a flush of the person `scope`'s own conversation keeps its facts: their scope,
        or the shared one when the admission rule lets people write it."""
        if self.store is None:
            return None
        if self.shares(scope):
            return self.store
        return ScopedFacts(self.store.store, scope, self.failures)

    def heard(self, item: InboxItem) -> None:
        """Note what a person said (an operator message): the model's `memory_save` may claim a
        person's word as its source only for what such a message states. Peers, heartbeats and
        tool outputs are not people."""
        principal = item.principal or item.sender
        if self.memory_tools is not None:
            self.memory_tools.converse_with(principal, self.shares(principal))
        if self.people is not None and item.kind == ItemKind.OPERATOR_MESSAGE:
            who = principal if item_source(principal) == "person" else ""
            self.people.heard(redact(item.text).text, who)

    def tick(self) -> list[str]:
        """Start the memory maintenance jobs that are due, in the background; their names."""
        if self.maintenance is None:
            return []
        try:
            started: list[str] = self.maintenance.tick()
        except self.failures as failed:
            log.warning("memory maintenance not started: %s", failed)
            return []
        return started

    @property
    def mode(self) -> MemoryMode:
        if self.memory_store is None:
            return "unknown"
        value = str(self.memory_store.embeddings.mode.value)
        return "hybrid" if value == "hybrid" else "keyword"

    @classmethod
    def open(
        cls, settings: Settings, config: AgentRuntimeConfig, token: TokenSource, complete: Complete
    ) -> MemoryBridge:
        try:
            from agent_runtime.memory import sqlite
            from agent_runtime.memory.bm25 import WorkspaceIndex
            from agent_runtime.memory.factlog import FactLog, is_fact_line
            from agent_runtime.memory.maintenance import MaintenanceRunner
            from agent_runtime.memory.models import MemoryConfig
            from agent_runtime.memory.provenance import PersonWords
            from agent_runtime.memory.store import MemoryStore
            from agent_runtime.memory.tools import MemoryTools
        except ImportError as missing:
            log.warning("memory store unavailable (%s): facts go to MEMORY.md only", missing)
            return cls(shared_writers=tuple(config.memory_shared_writers))
        workspace_root = settings.data_dir / "workspace"
        embedder, dimensions = memory_embedder(settings, config, token)
        try:
            store = MemoryStore(
                settings.data_dir / MEMORY_DB,
                embedder=embedder,
                config=MemoryConfig(
                    dimensions=dimensions,
                    embedding_model=config.embedding_model if embedder is not None else None,
                    contradiction_similarity=config.contradiction_similarity,
                ),
                fact_log=FactLog(workspace_root),
            )
        except (sqlite.Error, sqlite.SqliteVecUnavailable, OSError, ValueError) as failed:
            log.warning("memory store did not open (%s): facts go to MEMORY.md only", failed)
            return cls(shared_writers=tuple(config.memory_shared_writers))
        people = PersonWords()
        memory_tools = MemoryTools(
            store, WorkspaceIndex(workspace_root, skip_line=is_fact_line), people=people
        )
        handlers = memory_tools.handlers()
        tools = [
            Tool(
                spec["function"]["name"],
                spec["function"].get("description", ""),
                spec["function"].get("parameters", {"type": "object"}),
                _database_errors_as_tool_errors(handlers[spec["function"]["name"]], sqlite.Error),
            )
            for spec in memory_tools.tool_specs()
        ]
        # The built-in `test` model answers a maintenance prompt with an echo of it, which the
        # consolidation job would take for the new MEMORY.md: its jobs run without a model.
        model_call = None if config.model == TEST_MODEL else complete
        runner = MaintenanceRunner(store, settings.data_dir, complete=model_call, model=config.model)
        return cls(
            store=StoreFacts(store, memory_tools),
            tools=tools,
            memory_store=store,
            maintenance=runner,
            people=people,
            memory_tools=memory_tools,
            shared_writers=tuple(config.memory_shared_writers),
            failures=(sqlite.Error, OSError, ValueError),
        )


def memory_embedder(
    settings: Settings, config: AgentRuntimeConfig, token: TokenSource
) -> tuple[GatewayEmbedder | None, int]:
    """The gateway embedder, except for a store that replaced a damaged one: that store is
    searched by keyword only until the operator restores a backup or accepts it."""
    fresh = fresh_store_of(settings.data_dir / MEMORY_DB)
    if fresh is not None:
        log.warning("memory.db %s", fresh.describe())
        return None, DEFAULT_DIMENSIONS
    return gateway_embedder(settings, config, token)


def gateway_embedder(
    settings: Settings, config: AgentRuntimeConfig, token: TokenSource
) -> tuple[GatewayEmbedder | None, int]:
    """The gateway embedder for the fleet's embedding model (none: keyword-only memory) and the
    size of its vectors; an unstated size is learnt from one probe, and a failed probe leaves
    memory keyword-only for this process rather than storing vectors of a guessed size."""
    from agent_runtime.memory.embeddings import EmbeddingError, GatewayEmbedder

    if not config.embedding_model:
        log.info("no embedding model configured: memory search is keyword-only")
        return None, config.embedding_dimensions or DEFAULT_DIMENSIONS
    embedder = GatewayEmbedder(
        settings.orchestrator_url, token, config.embedding_model, config.embedding_dimensions
    )
    if config.embedding_dimensions is not None:
        return embedder, config.embedding_dimensions
    try:
        return embedder, embedder.probe_dimensions()
    except EmbeddingError as failed:
        log.warning(
            "embedding model %s did not answer (%s): memory search is keyword-only",
            config.embedding_model,
            failed,
        )
        embedder.close()
        return None, DEFAULT_DIMENSIONS


def _database_errors_as_tool_errors(handler: Handler, error: type[Exception]) -> Handler:
    """The SQLite driver's errors are not OSErrors: report them to the model like other failures."""

    def run(arguments: dict[str, Any]) -> str:
        try:
            return handler(arguments)
        except error as failed:
            # The cause is kept only for a full disk, which the registry then names as such.
            raise ToolError(f"memory database error: {failed}") from (
                failed if is_disk_full(failed) else None
            )

    return run

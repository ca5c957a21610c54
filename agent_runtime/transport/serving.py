"""What the agent serves to the orchestrator over its channel (`AgentRequest` -> answer).

The orchestrator never opens a path in the agent's storage: it hands the agent its workspace
(`workspace.sync` when the channel opens, `workspace.put` for each accepted change) and asks the
agent for what only the agent holds: its memory (the operator's memory commands) and the
files it keeps itself (learnings, daily logs). The memory store is opened for a request and
closed after it, so an idle agent stays small; a fresh agent creates its store when first asked.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from agent_runtime.process.settings import Settings
from agent_runtime.process.storage_check import accept_fresh_store, fresh_store_of
from agent_runtime.protocol import (
    AgentOp,
    AgentRequest,
    AgentRuntimeConfig,
    ContextSettings,
    ContextStrategy,
    ErrorBody,
    FileEntry,
    FileListing,
    FileText,
    FreshStoreAccepted,
    RestoreChunk,
    RestorePlan,
    WorkspaceCopy,
)
from agent_runtime.workspace.binary import SCREENSHOTS, BadBinaryName, VersionedBinaries
from agent_runtime.workspace.files import FileAccessError, PathEscape, SymlinkRefused, WorkspaceFiles
from agent_runtime.workspace.restore import RESTORE_OPS, RestoreError, Restores, restart_in_place_soon
from agent_runtime.workspace.snapshot import SNAPSHOT_OPS, SnapshotError, Snapshots
from agent_runtime.workspace.versioned import UnknownFile, Workspace, synced_together

if TYPE_CHECKING:
    from agent_runtime.cognition.runner import CognitionRunner
    from agent_runtime.memory.maintenance import MaintenanceRunner
    from agent_runtime.memory.store import MemoryStore

    JobRunners = tuple[MaintenanceRunner | None, CognitionRunner | None]

log = logging.getLogger(__name__)

MEMORY_DB = "memory.db"
# What the operator may read of the agent's own files (the rest of /data is the agent's alone).
READABLE_FOLDERS = frozenset({"learnings", "memory"})
MAX_READ = 1024 * 1024
OPERATOR_FORGET_REASON = "forgotten by the operator"
Answer = tuple[int, Any]


class JobBusy(RuntimeError):
    """The memory job asked for is running already."""


def refusal(status: int, error: str, message: str) -> Answer:
    return status, ErrorBody(error=error, message=message).model_dump()


class AgentService:
    """Answers the orchestrator's requests for one agent."""

    def __init__(
        self,
        settings: Settings,
        config: Callable[[], AgentRuntimeConfig | None],
        token: Callable[[], str],
        job_runners: Callable[[], JobRunners | None] | None = None,
        restart: Callable[[], None] = restart_in_place_soon,
        forgotten_in_worker: Callable[[list[str]], bool] | None = None,
    ) -> None:
        """`job_runners`: the running worker's memory job runners (with its models), when it has
        started; without them `memory.run` runs the job here, without a model. `restart`: called
        once a restore is applied, to run the agent afresh on the restored files.
        `forgotten_in_worker`: hands the texts of an operator's forget to the running worker
        (False when none runs), which rewrites what it holds in memory with the files."""
        self.settings = settings
        self._config = config
        self._token = token
        self._job_runners = job_runners
        self.workspace = Workspace(settings.data_dir)
        self.screenshots = VersionedBinaries(settings.data_dir, SCREENSHOTS)
        self.snapshots = Snapshots(settings.data_dir)
        self.restores = Restores(settings.data_dir)
        self._restart = restart
        self._forgotten_in_worker = forgotten_in_worker

    @staticmethod
    def inline(request: AgentRequest) -> bool:
        """Workspace updates are applied in the order they arrive, before later replies."""
        return request.op in (AgentOp.WORKSPACE_SYNC, AgentOp.WORKSPACE_PUT)

    def answer(self, request: AgentRequest) -> Answer:
        try:
            if self.inline(request):
                return self._take_workspace(WorkspaceCopy.model_validate(request.body))
            if request.op in (AgentOp.FILES_LIST, AgentOp.FILES_READ):
                return self._files(request)
            if request.op == AgentOp.HISTORY_READ:
                from agent_runtime.workspace.transcript import serve_transcript  # loaded when first asked

                return 200, serve_transcript(self.settings.data_dir, request.body)
            if request.op in SNAPSHOT_OPS:
                return self._snapshot(request)
            if request.op == AgentOp.MEMORY_ACCEPT_FRESH:
                accepted = accept_fresh_store(self.settings.data_dir / MEMORY_DB)
                return 200, FreshStoreAccepted(accepted=accepted).model_dump()
            if request.op in RESTORE_OPS:
                return self._restore(request)
            return self._memory(request)
        except (ValueError, TypeError) as bad:  # pydantic's ValidationError included
            return refusal(422, "invalid_request", f"{request.op.value}: {bad}")
        except OSError as failed:
            return refusal(503, "unavailable", f"{request.op.value} failed in the agent: {failed}")

    # --- the working copy ------------------------------------------------------------------

    def _take_workspace(self, copy: WorkspaceCopy) -> Answer:
        with synced_together():
            for entry in copy.files:
                try:
                    if entry.binary_b64 is None:
                        self.workspace.mirror(entry.name, entry.content)
                    else:
                        self.screenshots.mirror(entry.name, base64.b64decode(entry.binary_b64, validate=True))
                except UnknownFile as unknown:
                    return refusal(422, "unknown_file", str(unknown))
                except (BadBinaryName, binascii.Error) as bad:
                    return refusal(422, "unknown_file", f"{entry.name[:80]!r}: {bad}")
        return 200, {"files": len(copy.files)}

    # --- files the agent keeps itself ------------------------------------------------------

    def _files(self, request: AgentRequest) -> Answer:
        files = WorkspaceFiles(self.workspace.root, quota_bytes=0)  # read-only use: no quota
        if request.op == AgentOp.FILES_LIST:
            folder = str(request.body.get("folder", ""))
            if folder not in READABLE_FOLDERS:
                return refusal(403, "forbidden", f"{folder!r} is not readable by the operator")
            try:
                entries = files.list(folder)
            except FileAccessError:
                entries = []
            listing = FileListing(
                files=[FileEntry(path=e.path, size=e.size, is_dir=e.is_dir) for e in entries]
            )
            return 200, listing.model_dump()
        path = str(request.body.get("path", ""))
        if path.split("/", 1)[0] not in READABLE_FOLDERS:
            return refusal(403, "forbidden", f"{path!r} is not readable by the operator")
        limit = min(int(request.body.get("limit", MAX_READ)), MAX_READ)
        try:
            content = files.read(path, limit=limit)
        except (PathEscape, SymlinkRefused) as refused:
            return refusal(400, "path_escape", str(refused))
        except FileAccessError as missing:
            return refusal(404, "unknown_file", str(missing))
        return 200, FileText(path=path, content=content).model_dump()

    # --- snapshots for backups ------------------------------------------------------------------

    def _snapshot(self, request: AgentRequest) -> Answer:
        try:
            if request.op == AgentOp.SNAPSHOT_TAKE:
                return 200, self.snapshots.take().model_dump()
            if request.op == AgentOp.SNAPSHOT_READ:
                chunk = self.snapshots.read(str(request.body["path"]), int(request.body.get("offset", 0)))
                return 200, chunk.model_dump()
            return 200, {"dropped": self.snapshots.drop()}
        except (SnapshotError, KeyError) as failed:
            return refusal(404, "not_found", f"{request.op.value}: {failed}")

    # --- restores (a backup restored, a move to another node) -----------------------------------

    def _restore(self, request: AgentRequest) -> Answer:
        restores = self.restores
        try:
            if request.op == AgentOp.RESTORE_BEGIN:
                return 200, restores.begin(RestorePlan.model_validate(request.body)).model_dump()
            if request.op == AgentOp.RESTORE_WRITE:
                return 200, restores.write(RestoreChunk.model_validate(request.body)).model_dump()
            if request.op == AgentOp.RESTORE_ABORT:
                return 200, {"dropped": restores.abort()}
            applied = restores.commit()
        except RestoreError as refused:
            return refusal(422, "restore_refused", f"{request.op.value}: {refused}")
        log.info("restored %d files (%d bytes): restarting on them", applied.files, applied.bytes)
        self._restart()
        return 200, applied.model_dump()

    # --- memory ----------------------------------------------------------------------------

    def _memory(self, request: AgentRequest) -> Answer:
        try:
            from agent_runtime.memory import sqlite
            from agent_runtime.memory.contradictions import ContradictionNotFound
            from agent_runtime.memory.store import FactNotFound, MemoryInputError
            from agent_runtime.memory.vectors import VectorError
        except ImportError as missing:
            return refusal(503, "unavailable", f"this agent has no memory store: {missing}")
        from agent_runtime.cognition.operator import UnknownJob

        try:
            with self._store() as store:
                if request.op in (AgentOp.MEMORY_JOBS, AgentOp.MEMORY_RUN):
                    return 200, self._jobs(store, request.op, request.body)
                if request.op == AgentOp.MEMORY_STATUS:
                    return 200, self._status(store)
                return 200, _memory_op(store, request.op, request.body)
        except (FactNotFound, ContradictionNotFound, UnknownJob) as gone:
            return refusal(404, "not_found", str(gone))
        except JobBusy as busy:
            return refusal(409, "conflict", str(busy))
        except (MemoryInputError, VectorError, ValueError, KeyError) as bad:
            return refusal(422, "invalid_request", str(bad))
        except (sqlite.Error, sqlite.SqliteVecUnavailable) as failed:
            return refusal(503, "unavailable", f"the memory store is busy or unreadable: {failed}")

    def _status(self, store: MemoryStore) -> Any:
        """The store's figures, and why it is keyword-only when it replaced a damaged one."""
        status = store.status()
        fresh = fresh_store_of(self.settings.data_dir / MEMORY_DB)
        if fresh is not None:
            status.damaged = fresh.describe()
        return _dump(status)

    def _jobs(self, store: MemoryStore, op: AgentOp, body: dict[str, Any]) -> Any:
        """Run records and checkpoints of the memory jobs, or one job run now."""
        from agent_runtime.cognition.operator import memory_jobs, resolve, run_job
        from agent_runtime.cognition.runner import CognitionRunner
        from agent_runtime.memory.maintenance import MaintenanceRunner

        config = self._config()
        settings = config.context if config is not None else ContextSettings()
        data_dir = self.settings.data_dir
        if op == AgentOp.MEMORY_JOBS:
            return memory_jobs(store, data_dir, settings).model_dump(mode="json")
        family, job = resolve(str(body.get("job", "")), settings.strategy)
        running = self._job_runners() if self._job_runners is not None else None
        maintenance, cognition = running if running is not None else (None, None)
        if maintenance is None:
            maintenance = MaintenanceRunner(store, data_dir)
        if cognition is None and settings.strategy == ContextStrategy.CHECKPOINT:
            cognition = CognitionRunner(data_dir, settings, agent_model=config.model if config else "test")
        try:
            return run_job(family, job, maintenance, cognition).model_dump(mode="json")
        except RuntimeError as busy:
            raise JobBusy(str(busy)) from None

    def _forget_copies(self, texts: list[str]) -> None:
        """The operator's forget reaches every copy in this agent's storage: through the running
        worker, which holds some of them in memory, else in the files alone."""
        if self._forgotten_in_worker is not None and self._forgotten_in_worker(texts):
            return
        from agent_runtime.work.erasure import Eraser

        Eraser(self.settings.data_dir).erase(texts)

    @contextmanager
    def _store(self) -> Iterator[MemoryStore]:
        from agent_runtime.memory.embeddings import GatewayEmbedder
        from agent_runtime.memory.factlog import FactLog
        from agent_runtime.memory.models import MemoryConfig
        from agent_runtime.memory.store import MemoryStore
        from agent_runtime.work.memory_bridge import DEFAULT_DIMENSIONS, memory_embedder

        config = self._config()
        embedder: GatewayEmbedder | None = None
        dimensions, model = DEFAULT_DIMENSIONS, None
        if config is not None:
            embedder, dimensions = memory_embedder(self.settings, config, self._token)
            model = config.embedding_model if embedder is not None else None
        store = MemoryStore(
            self.settings.data_dir / MEMORY_DB,
            embedder=embedder,
            config=MemoryConfig(dimensions=dimensions, embedding_model=model, reindex_on_model_change=False),
            fact_log=FactLog(self.workspace.root),
        )
        store.forget_listeners.append(self._forget_copies)
        try:
            yield store
        finally:
            store.close()
            if embedder is not None:
                embedder.close()


def _dump(value: BaseModel | list[BaseModel]) -> Any:
    if isinstance(value, list):
        return [item.model_dump(mode="json") for item in value]
    return value.model_dump(mode="json")


def _logged(store: MemoryStore, result: Any) -> Any:
    """An operator's fact goes to the agent's fact log too, as the agent's own saves do."""
    from agent_runtime.memory.models import SaveOutcome

    if result.outcome in (SaveOutcome.SAVED, SaveOutcome.SUPERSEDED) and result.fact_id is not None:
        fact = store.get(result.fact_id)
        if fact is not None and store.fact_log is not None:
            store.fact_log.append(fact)
    return result


def _memory_op(store: MemoryStore, op: AgentOp, body: dict[str, Any]) -> Any:
    from agent_runtime.memory.models import ContradictionStatus, FactSource, FactStatus, MemoryMode
    from agent_runtime.memory.store import FactNotFound

    if op == AgentOp.MEMORY_STATUS:
        return _dump(store.status())
    if op == AgentOp.MEMORY_LIST:
        status = str(body.get("status", "active"))
        source = body.get("source")
        facts = store.list_facts(
            status=None if status == "all" else FactStatus(status),
            category=body.get("category"),
            source=FactSource(source) if source else None,
            limit=int(body.get("limit", 100)),
            offset=int(body.get("offset", 0)),
            scope=body.get("scope"),
        )
        return {"facts": _dump(list(facts))}
    if op == AgentOp.MEMORY_ADD:
        result = store.save(
            str(body["text"]),
            category=body.get("category"),
            subject=body.get("subject"),
            source=FactSource.OPERATOR,
        )
        return _dump(_logged(store, result))
    if op == AgentOp.MEMORY_GET:
        fact_id = int(body["id"])
        history = store.history(fact_id)
        fact = next((f for f in history if f.id == fact_id), None)
        if fact is None:
            raise FactNotFound(fact_id)
        return {"fact": _dump(fact), "history": _dump(list(history))}
    if op == AgentOp.MEMORY_EDIT:
        return _dump(_logged(store, store.edit(int(body["id"]), str(body["text"]), body.get("category"))))
    if op == AgentOp.MEMORY_FORGET:
        forgot = store.forget_all(
            int(body["id"]), OPERATOR_FORGET_REASON, with_restatements=bool(body.get("with_restatements"))
        )
        return _dump(forgot)
    if op == AgentOp.MEMORY_SEARCH:
        query, k = str(body["q"]), int(body.get("k", 10))
        return {
            "mode": MemoryMode(store.embeddings.mode).value,
            "facts": _dump(list(store.search(query, k, record_access=False))),
            "episodes": _dump(list(store.search_episodes(query, min(k, 5)))),
        }
    if op == AgentOp.MEMORY_HISTORY:
        from agent_runtime.memory.timeline import search_versions, utc

        as_of = utc(str(body["as_of"])) if body.get("as_of") else None
        versions = search_versions(store, str(body["q"]), int(body.get("k", 10)), as_of=as_of)
        return {"mode": MemoryMode(store.embeddings.mode).value, "versions": _dump(list(versions))}
    if op == AgentOp.MEMORY_CONTRADICTIONS:
        status = str(body.get("status", "pending"))
        found = store.contradictions(None if status == "all" else ContradictionStatus(status))
        return {"contradictions": _dump(list(found))}
    if op == AgentOp.MEMORY_RESOLVE:
        keep = str(body["keep"])
        if keep not in ("old", "new"):
            raise ValueError(f"keep must be 'old' or 'new', got {keep!r}")
        return _dump(store.resolve(int(body["id"]), "old" if keep == "old" else "new"))
    raise ValueError(f"unknown operation {op.value}")

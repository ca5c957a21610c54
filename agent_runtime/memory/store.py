"""The agent's long-term memory: one SQLite file (`/data/memory.db`) of facts and episodes.

`MemoryStore` is safe to share between threads (the agent loop and the maintenance jobs): one
connection behind a lock, explicit transactions, and no network call while a transaction is
open (embeddings are computed first). WAL mode keeps readers on the host (the operator API)
out of the agent's way, and a committed fact survives a container restart.

See `truth` for how a new fact repeats, replaces or disputes a stored one, and `search` for
how facts are ranked.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from agent_runtime.memory import categories, contradictions, episodes, forgetting, migrate, truth
from agent_runtime.memory.checkpointer import Checkpointer
from agent_runtime.memory.embeddings import (
    MEASURED_CONTRADICTION_SIMILARITY,
    Embedder,
    EmbeddingService,
    embedder_model,
    is_semantic,
    search_floor,
    similarity_scale,
)
from agent_runtime.memory.factlog import FactLog
from agent_runtime.memory.index import FactIndex
from agent_runtime.memory.models import (
    BARRED_SOURCES,
    PRECEDENCE,
    Contradiction,
    ContradictionStatus,
    Episode,
    EpisodeHit,
    Fact,
    FactHit,
    FactSource,
    FactStatus,
    ForgetResult,
    MemoryConfig,
    MemoryStatus,
    SaveOutcome,
    SaveResult,
)
from agent_runtime.memory.records import FACT_COLUMNS, FACT_FROM, Row, fact_from_row, iso
from agent_runtime.memory.scripts import index_text
from agent_runtime.memory.search import gather, rank
from agent_runtime.memory.sqlite import Connection, connect
from agent_runtime.memory.text import content_key, has_word
from agent_runtime.memory.vectors import Vector, to_blob
from agent_runtime.memory.writes import insert_fact, reinforce_fact, retire_fact
from agent_runtime.safety.redaction import redact

BACKFILL_BATCH = 32
# How many neighbours of a forgotten fact are checked for restatements.
RESTATEMENT_POOL = 20
TRUNCATE_ATTEMPTS = 5
log = logging.getLogger(__name__)


class MemoryInputError(ValueError):
    """A fact, query or id given to the store is unusable; the message says which and why."""


class FactNotFound(LookupError):
    def __init__(self, fact_id: int, wanted: str = "") -> None:
        self.fact_id = fact_id
        super().__init__(f"no {wanted + ' ' if wanted else ''}fact with id {fact_id}")


class MemoryStore:
    def __init__(
        self,
        path: Path | str,
        *,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        fact_log: FactLog | None = None,
        clock: Callable[[], datetime] | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.config = config or MemoryConfig()
        self.fact_log = fact_log
        self._now = clock or (lambda: datetime.now(UTC))
        self._lock = threading.RLock()
        self._depth = 0
        self._conn: Connection = connect(self.path, cache_mb=self.config.cache_mb)
        self._checkpointer = Checkpointer(self.path) if str(path) != ":memory:" else None
        self.embeddings = EmbeddingService(
            embedder,
            self.config.dimensions,
            failure_limit=self.config.failure_limit,
            retry_base_s=self.config.retry_base_s,
            retry_max_s=self.config.retry_max_s,
            clock=monotonic,
        )
        self.vector_note: str | None = None
        self.forget_listeners: list[Callable[[list[str]], None]] = []
        """Called with the texts of the facts just forgotten (copies of them elsewhere go too)."""
        self.index = FactIndex(self._conn, self.config.dimensions, self.config.matrix_max_mb)
        try:
            self._prepare()
        except BaseException:
            self.close()
            raise

    # Lifecycle

    def _prepare(self) -> None:
        with self.transaction() as conn:
            prepared = migrate.prepare(conn, self.config, self.embeddings.embedder is not None)
            FactIndex(conn, prepared.dims).backfill_codes()
            FactIndex(conn, prepared.dims).reindex_spaceless()
        self.index = FactIndex(self._conn, prepared.dims, self.config.matrix_max_mb)
        if not prepared.vectors_usable:
            self.vector_note = prepared.note
            self.embeddings.embedder = None

    def close(self) -> None:
        if self._checkpointer is not None:
            self._checkpointer.stop()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """BEGIN IMMEDIATE ... COMMIT; nested calls become savepoints of the outer one."""
        with self._lock:
            depth = self._depth
            changes = self._conn.total_changes
            self._conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT sp{depth}")
            self._depth += 1
            try:
                yield self._conn
            except BaseException:
                self._depth -= 1
                # The matrix in memory may hold changes being undone: it is filled again.
                self.index.drop_matrix()
                if depth == 0:
                    self._conn.execute("ROLLBACK")
                else:
                    self._conn.execute(f"ROLLBACK TO sp{depth}")
                    self._conn.execute(f"RELEASE sp{depth}")
                raise
            self._depth -= 1
            self._conn.execute("COMMIT" if depth == 0 else f"RELEASE sp{depth}")
            if depth == 0 and self._checkpointer is not None and self._conn.total_changes != changes:
                self._checkpointer.written()

    def now(self) -> datetime:
        return self._now()

    # Saving

    def _clean(self, text: str) -> str:
        return self._clean_and_redact(text)[0]

    def _clean_and_redact(self, text: str) -> tuple[str, tuple[str, ...]]:
        """The text on one line, with credentials replaced by markers (and which kinds were)."""
        redacted = redact(str(text))
        cleaned = " ".join(redacted.text.split())
        if not has_word(cleaned):
            raise MemoryInputError("fact text is empty: give at least one word")
        if len(cleaned) > self.config.max_text_chars:
            raise MemoryInputError(
                f"fact text is {len(cleaned)} characters, over the limit of {self.config.max_text_chars}: "
                "save one fact at a time"
            )
        return cleaned, redacted.kinds

    def prepare(
        self,
        text: str,
        *,
        category: str | None = None,
        source: FactSource | str = FactSource.AGENT,
        turn_ids: Sequence[str] = (),
        subject: str | None = None,
        salience: float | None = None,
        vector: Vector | None = None,
        supersedes: int | None = None,
        embed: bool = True,
        scope: str = "",
    ) -> truth.Candidate:
        """Validate a fact, redact any credential in it and compute its embedding (outside any
        transaction)."""
        cleaned, redacted = self._clean_and_redact(text)
        try:
            origin = FactSource(source)
        except ValueError:
            choices = ", ".join(s.value for s in FactSource)
            raise MemoryInputError(f"unknown fact source {source!r}: use one of {choices}") from None
        if vector is not None:
            blob: bytes | None = to_blob(vector, self.index.dims)
        elif embed:
            found = self.embeddings.embed([cleaned])
            blob = found[0] if found else None
        else:
            blob = None
        if not (category and category.strip()):
            with self._lock:
                category = categories.choose(self.index, cleaned, blob, self.config)
        return truth.Candidate(
            text=cleaned,
            key=content_key(cleaned),
            category=category,
            source=origin,
            subject=truth.normalize_subject(subject),
            turn_ids=[str(t) for t in turn_ids],
            salience=salience,
            vector=blob,
            supersedes=supersedes,
            redacted=redacted,
            scope=scope,
        )

    def save(
        self,
        text: str,
        *,
        category: str | None = None,
        source: FactSource | str = FactSource.AGENT,
        turn_ids: Sequence[str] = (),
        subject: str | None = None,
        salience: float | None = None,
        vector: Vector | None = None,
        supersedes: int | None = None,
        scope: str = "",
    ) -> SaveResult:
        """Save one fact. `vector` skips the embedder (a precomputed embedding); `supersedes`
        names the fact this one corrects; `scope` is whose it is ('' shared, or a person's
        principal). A fact only meets the facts of its own scope (duplicates, subjects). See
        `truth` for what can happen."""
        candidate = self.prepare(
            text,
            category=category,
            source=source,
            turn_ids=turn_ids,
            subject=subject,
            salience=salience,
            vector=vector,
            supersedes=supersedes,
            scope=scope,
        )
        return self.save_prepared(candidate)

    def save_prepared(self, candidate: truth.Candidate) -> SaveResult:
        result = self._save_prepared(candidate)
        if candidate.redacted:
            result.redacted = list(candidate.redacted)
        return result

    def _save_prepared(self, candidate: truth.Candidate) -> SaveResult:
        now = iso(self._now())
        with self.transaction() as conn:
            barrier = truth.find_barrier(conn, candidate.key, candidate.vector, self.config, candidate.text)
            if barrier is not None:
                if candidate.source in BARRED_SOURCES:
                    # Not the text: the log must not keep what was forgotten.
                    log.info(
                        "%s save refused: it restates a forgotten fact (barrier %d)",
                        candidate.source,
                        barrier,
                    )
                    return SaveResult(
                        outcome=SaveOutcome.BLOCKED,
                        detail=f"this fact was forgotten on purpose (barrier {barrier})",
                    )
                truth.lift_barriers(conn, candidate.key, candidate.vector, self.config, candidate.text)
            category_id = self.index.category_id(candidate.category)
            neighbors: list[tuple[int, float]] = []
            if candidate.vector is not None:
                neighbors = self.index.nearest(candidate.vector, self.config.neighbor_k, category_id)
            if candidate.supersedes is None:
                duplicate = truth.duplicate_of(conn, candidate, neighbors, self.config)
                if duplicate is not None:
                    reinforce_fact(self.index, duplicate, candidate, now)
                    return SaveResult(
                        outcome=SaveOutcome.MERGED, fact_id=duplicate["id"], replaced_id=duplicate["id"]
                    )
            target = truth.same_subject(conn, candidate, neighbors, self.config)
            if candidate.supersedes is not None and target is None:
                raise FactNotFound(candidate.supersedes, "active")
            why = ""
            if target is None and (dispute := self._disputed(conn, candidate)) is not None:
                target = dispute.target
                why = f"; they differ on {dispute.differs_on} (similarity {dispute.similarity:.2f})"
            if target is None:
                return SaveResult(
                    outcome=SaveOutcome.SAVED, fact_id=insert_fact(self.index, candidate, category_id, now)
                )
            if PRECEDENCE[candidate.source] >= PRECEDENCE[FactSource(target["source"])]:
                new_id = insert_fact(self.index, candidate, category_id, now, supersedes=target["id"])
                retire_fact(self.index, target, FactStatus.SUPERSEDED, now, superseded_by=new_id)
                return SaveResult(
                    outcome=SaveOutcome.SUPERSEDED,
                    fact_id=new_id,
                    replaced_id=target["id"],
                    detail=f"replaces fact {target['id']} ({target['source']}){why}" if why else "",
                )
            candidate.category = self._category_name(category_id)
            contradiction = truth.record_contradiction(conn, target, candidate, now)
            return SaveResult(
                outcome=SaveOutcome.CONTRADICTION,
                fact_id=target["id"],
                contradiction_id=contradiction,
                detail=f"disputes fact {target['id']} ({target['source']}), which outranks "
                f"{candidate.source.value}{why}",
            )

    def contradiction_threshold(self) -> float | None:
        """The similarity of the rule 'disputed by meaning' (`truth`), or None when it is off:
        no embedder, vectors without meaning, or a model with no measured figure and none set."""
        embedder = self.embeddings.embedder
        if not is_semantic(embedder):
            return None
        if self.config.contradiction_similarity is not None:
            return self.config.contradiction_similarity
        model = embedder_model(embedder) or self.config.embedding_model
        return MEASURED_CONTRADICTION_SIMILARITY.get(model) if model else None

    def _disputed(self, conn: Connection, candidate: truth.Candidate) -> truth.Dispute | None:
        threshold = self.contradiction_threshold()
        if threshold is None or candidate.vector is None or candidate.supersedes is not None:
            return None
        # Every category: a guess is often filed elsewhere than the statement it contradicts.
        neighbors = self.index.nearest(candidate.vector, self.config.neighbor_k)
        return truth.disputed_by_meaning(conn, candidate, neighbors, threshold)

    def _category_name(self, category_id: int) -> str:
        row = self._conn.execute("SELECT name FROM categories WHERE id = ?", (category_id,)).fetchone()
        return str(row[0])

    # Reading

    def _row(self, fact_id: int) -> Row | None:
        row: Row | None = self._conn.execute(
            f"SELECT {FACT_COLUMNS} FROM {FACT_FROM} WHERE f.id = ?", (fact_id,)
        ).fetchone()
        return row

    def get(self, fact_id: int) -> Fact | None:
        with self._lock:
            row = self._row(fact_id)
        return fact_from_row(row) if row is not None else None

    def list_facts(
        self,
        *,
        status: FactStatus | None = FactStatus.ACTIVE,
        category: str | None = None,
        source: FactSource | None = None,
        limit: int = 100,
        offset: int = 0,
        scope: str | None = None,
    ) -> list[Fact]:
        clauses, params = [], []
        if scope is not None:
            clauses.append("f.scope = ?")
            params.append(scope)
        if status is not None:
            clauses.append("f.status = ?")
            params.append(status.value)
        if category is not None:
            clauses.append("c.name = ?")
            params.append(" ".join(category.lower().split()))
        if source is not None:
            clauses.append("f.source = ?")
            params.append(source.value)
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {FACT_COLUMNS} FROM {FACT_FROM} {where} ORDER BY f.id DESC LIMIT ? OFFSET ?",
                (*params, limit, offset),
            ).fetchall()
        return [fact_from_row(row) for row in rows]

    def history(self, fact_id: int) -> list[Fact]:
        """Every version of this fact's subject, oldest first, following the supersession links."""
        with self._lock:
            row = self._row(fact_id)
            if row is None:
                raise FactNotFound(fact_id)
            chain = [row]
            while chain[0]["supersedes"] is not None and (older := self._row(chain[0]["supersedes"])):
                chain.insert(0, older)
            while chain[-1]["superseded_by"] is not None and (newer := self._row(chain[-1]["superseded_by"])):
                chain.append(newer)
        return [fact_from_row(r) for r in chain]

    def search(
        self,
        query: str,
        k: int = 8,
        *,
        category: str | None = None,
        record_access: bool = True,
        min_similarity: float | None = None,
        vector: Vector | None = None,
        scopes: Sequence[str] | None = None,
    ) -> list[FactHit]:
        """Active facts ranked by the hybrid score (see `search`), of the given `scopes` only
        (None: every scope, for the operator's tools). Facts matching no query word
        and less similar than `min_similarity` (default: the config's) are left out. The query
        embedding is cached, so a repeated query costs no embedding call; `vector` gives the
        query's embedding directly (computed elsewhere) and skips the embedder."""
        if not query.strip():
            raise MemoryInputError("search query is empty")
        if k < 1:
            raise MemoryInputError(f"k must be at least 1, got {k}")
        query_vector = (
            to_blob(vector, self.index.dims) if vector is not None else self.embeddings.embed_query(query)
        )
        with self._lock:
            category_id = None
            if category is not None:
                row = self._conn.execute(
                    "SELECT id FROM categories WHERE name = ?", (" ".join(category.lower().split()),)
                ).fetchone()
                if row is None:
                    return []
                category_id = int(row[0])
            scale = similarity_scale(self.config, self.embeddings.embedder)
            candidates = gather(self.index, query, query_vector, k, self.config, category_id, scale)
            floor = (
                search_floor(self.config, self.embeddings.embedder)
                if min_similarity is None
                else min_similarity
            )
            hits = rank(
                self.index,
                candidates,
                query_vector is not None,
                k,
                self.config,
                category_id,
                floor,
                frozenset(scopes) if scopes is not None else None,
                scale,
            )
        if record_access and hits:
            self.record_access([hit.fact.id for hit in hits])
        return hits

    def record_access(self, fact_ids: Sequence[int]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "UPDATE facts SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?",
                [(iso(self._now()), fact_id) for fact_id in fact_ids],
            )

    # Changing and forgetting

    def edit(self, fact_id: int, text: str, category: str | None = None) -> SaveResult:
        """The operator's correction: a new version (source operator) replacing the fact."""
        with self._lock:
            row = truth.active_fact(self._conn, fact_id)
        if row is None:
            raise FactNotFound(fact_id, "active")
        cleaned = self._clean(text)
        if content_key(cleaned) == row["content_key"] and category in (None, row["category"]):
            with self.transaction() as conn:
                conn.execute(
                    "UPDATE facts SET text = ?, updated_at = ? WHERE id = ?",
                    (cleaned, iso(self._now()), fact_id),
                )
                conn.execute("UPDATE fact_fts SET text = ? WHERE rowid = ?", (index_text(cleaned), fact_id))
            return SaveResult(
                outcome=SaveOutcome.MERGED, fact_id=fact_id, replaced_id=fact_id, detail="wording fixed"
            )
        candidate = self.prepare(
            cleaned,
            category=category or row["category"],
            source=FactSource.OPERATOR,
            subject=row["subject"],
            supersedes=fact_id,
        )
        return self.save_prepared(candidate)

    def forget(self, fact_id: int, reason: str = "forgotten on request") -> list[int]:
        """Forget a fact and its older versions: text erased, out of every index, barrier left,
        and the records derived from it redacted (`forgetting`); then the WAL is checkpointed and
        truncated, so with `secure_delete` no file of the store holds the text any more.

        Returns the ids forgotten (empty when it was already forgotten).
        """
        now = iso(self._now())
        forgotten: list[int] = []
        texts: list[str] = []
        with self.transaction() as conn:
            row = self._row(fact_id)
            if row is None:
                raise FactNotFound(fact_id)
            key = forgetting.salt(conn)
            while row is not None and row["status"] != FactStatus.FORGOTTEN.value:
                vector = self.index.embedding(row["id"])
                words = forgetting.fingerprint(row["text"], key)
                truth.add_barrier(conn, row["content_key"], vector, row["id"], reason, now, words)
                texts.append(row["text"])
                self.index.remove(row["id"], row["category_id"], keep_embedding=False)
                conn.execute(
                    "UPDATE facts SET status = 'forgotten', text = '', subject = NULL, turn_ids = '[]', "
                    "has_vector = 0, updated_at = ? WHERE id = ?",
                    (now, row["id"]),
                )
                truth.dismiss_contradictions(conn, row["id"], now)
                forgotten.append(int(row["id"]))
                row = self._row(row["supersedes"]) if row["supersedes"] is not None else None
            if forgotten:
                forgetting.scrub_derived(conn, texts, forgotten)
                # Deleted FTS5 rows stay in the index segments until they are merged.
                conn.execute("INSERT INTO fact_fts(fact_fts) VALUES ('optimize')")
        if forgotten:
            self.truncate_wal()
            if self.fact_log is not None:
                self.fact_log.redact(forgotten, texts)
            for listener in self.forget_listeners:
                listener(texts)
        return forgotten

    def forget_all(
        self,
        fact_id: int,
        reason: str = "forgotten on request",
        *,
        with_restatements: bool = False,
        allowed: Callable[[int], bool] = lambda _fact_id: True,
    ) -> ForgetResult:
        """Forget a fact, and with `with_restatements` the other facts that restate it (those
        `allowed` lets go); the restatements kept are listed, by id only: no answer repeats
        the text forgotten."""
        restated = [fact.id for fact in self.restatements(fact_id)]
        forgotten = self.forget(fact_id, reason)
        kept: list[int] = []
        for other in restated:
            if not with_restatements or not allowed(other):
                kept.append(other)
                continue
            with suppress(FactNotFound):
                forgotten += self.forget(other, reason)
        return ForgetResult(forgotten=forgotten, restatements=kept)

    def restatements(self, fact_id: int) -> list[Fact]:
        """Other active facts that restate this one: the same subject key, an embedding at least
        `restatement_similarity` close, or a text that states it or that it states
        (`forgetting.states_any`). A
        forget lists them, and forgets them too when asked."""
        with self._lock:
            row = self._row(fact_id)
            if row is None:
                raise FactNotFound(fact_id)
            versions = {int(fact.id) for fact in self.history(fact_id)}
            text, subject = str(row["text"]), row["subject"]
            found: set[int] = set()
            if subject:
                found |= {
                    int(r[0])
                    for r in self._conn.execute(
                        "SELECT id FROM facts WHERE status = 'active' AND subject = ?", (subject,)
                    ).fetchall()
                }
            vector = self.index.embedding(fact_id)
            if vector is not None:
                floor = self.config.restatement_similarity
                found |= {i for i, sim in self.index.nearest(vector, RESTATEMENT_POOL) if sim >= floor}
            if text:
                for hit_id in self.index.keyword(text, RESTATEMENT_POOL):
                    other = self._row(hit_id)
                    said = str(other["text"]) if other is not None else ""
                    if forgetting.states_any(said, [text]) or forgetting.states_any(text, [said]):
                        found.add(hit_id)
            ids = sorted(found - versions)
            rows = [self._row(i) for i in ids]
        return [fact_from_row(r) for r in rows if r is not None and r["status"] == FactStatus.ACTIVE.value]

    def truncate_wal(self) -> bool:
        """Copy the WAL into the database file and empty it; False when a reader held it back."""
        if self._checkpointer is None:
            return True
        busy = 1
        for attempt in range(TRUNCATE_ATTEMPTS):
            # The background checkpointer is held off, so only another process's reader can
            # make this one busy: it usually lets go within milliseconds.
            with self._checkpointer.lock, self._lock:
                busy, _frames, _done = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if not busy:
                break
            time.sleep(0.01 * (attempt + 1))
        if busy:
            log.warning("WAL of %s not truncated: a reader holds it; the next checkpoint will", self.path)
        return not busy

    def forgotten_matcher(self) -> forgetting.ForgottenMatcher:
        """Recognises text stating a forgotten fact (for workspace passages and MEMORY.md)."""
        with self._lock:
            return forgetting.ForgottenMatcher.load(self._conn)

    # Contradictions

    def contradictions(
        self, status: ContradictionStatus | None = ContradictionStatus.PENDING
    ) -> list[Contradiction]:
        with self._lock:
            return contradictions.listing(self._conn, status)

    def resolve(self, contradiction_id: int, keep: Literal["old", "new"]) -> Contradiction:
        """The operator's decision: keep the stored fact, or let the disputing one replace it."""
        if keep not in ("old", "new"):
            raise MemoryInputError(f"keep must be 'old' or 'new', got {keep!r}")
        with self._lock:
            claim = contradictions.pending(self._conn, contradiction_id)
        vector: bytes | None = claim["embedding"]
        if keep == "new" and vector is None:
            found = self.embeddings.embed([claim["text"]])
            vector = found[0] if found else None
        now = iso(self._now())
        with self.transaction() as conn:
            row = contradictions.pending(conn, contradiction_id)
            if keep == "old":
                contradictions.keep_old(conn, row, vector, now)
            else:
                contradictions.keep_new(self.index, row, vector, now)
            return contradictions.fetch(conn, contradiction_id)

    # Episodes

    def add_episode(
        self,
        start: str | datetime,
        end: str | datetime,
        turn_ids: Sequence[str],
        summary: str,
        *,
        embed: bool = True,
    ) -> Episode:
        """Store the summary of a compacted stretch of history (called after each compaction).
        `embed=False` (inside a transaction: no network call) leaves its vector to the backfill."""
        text = redact(summary).text.strip()
        if not text:
            raise MemoryInputError("episode summary is empty")
        start_text = iso(start) if isinstance(start, datetime) else str(start)
        end_text = iso(end) if isinstance(end, datetime) else str(end)
        found = self.embeddings.embed([text]) if embed else None
        with self.transaction() as conn:
            episode_id = episodes.insert(
                conn,
                start_text,
                end_text,
                list(turn_ids),
                text,
                found[0] if found else None,
                iso(self._now()),
            )
            episode = episodes.get(conn, episode_id)
        assert episode is not None
        return episode

    def search_episodes(self, query: str, k: int = 3) -> list[EpisodeHit]:
        vector = self.embeddings.embed_query(query) if query.strip() else None
        with self._lock:
            return episodes.search(
                self._conn,
                query,
                vector,
                k,
                self.config.vector_weight,
                self.config.keyword_weight,
                self.config.min_similarity,
            )

    def recent_episodes(self, limit: int = 10) -> list[Episode]:
        with self._lock:
            return episodes.recent(self._conn, limit)

    # Maintenance

    def decay(self) -> int:
        """One maintenance pass of salience decay; returns the facts touched."""
        with self.transaction() as conn:
            cursor = conn.execute(
                "UPDATE facts SET salience = MAX(?, salience * ?) WHERE status = 'active' AND salience > ?",
                (self.config.salience_floor, self.config.decay_factor, self.config.salience_floor),
            )
        return int(cursor.rowcount)

    def missing_vectors(self) -> int:
        with self._lock:
            facts = self._conn.execute(
                "SELECT COUNT(*) FROM facts WHERE status = 'active' AND has_vector = 0"
            ).fetchone()[0]
            episodes_missing = self._conn.execute(
                "SELECT COUNT(*) FROM episodes WHERE embedding IS NULL"
            ).fetchone()[0]
        return int(facts) + int(episodes_missing)

    def backfill_vectors(self, batch: int = BACKFILL_BATCH, max_batches: int | None = None) -> int:
        """Embed facts and episodes saved while embeddings were down; returns how many got vectors."""
        done, batches = 0, 0
        while max_batches is None or batches < max_batches:
            batches += 1
            with self._lock:
                rows = self._conn.execute(
                    "SELECT id, text, category_id FROM facts WHERE status = 'active' AND has_vector = 0 "
                    "ORDER BY id LIMIT ?",
                    (batch,),
                ).fetchall()
                pending_episodes = episodes.missing_vectors(self._conn, batch)
            if not rows and not pending_episodes:
                break
            texts = [row["text"] for row in rows] + [summary for _, summary in pending_episodes]
            vectors = self.embeddings.embed(texts)
            if vectors is None:
                break
            with self.transaction() as conn:
                for row, vector in zip(rows, vectors, strict=False):
                    still = conn.execute(
                        "SELECT 1 FROM facts WHERE id = ? AND status = 'active' AND has_vector = 0",
                        (row["id"],),
                    ).fetchone()
                    if still is not None:
                        self.index.attach_vector(row["id"], row["category_id"], vector)
                        done += 1
                for (episode_id, _), vector in zip(pending_episodes, vectors[len(rows) :], strict=True):
                    episodes.set_vector(conn, episode_id, vector)
                    done += 1
        return done

    def status(self) -> MemoryStatus:
        with self._lock:
            counts = dict(self._conn.execute("SELECT status, COUNT(*) FROM facts GROUP BY status").fetchall())
            episode_count = self._count("SELECT COUNT(*) FROM episodes")
            pending = self._count("SELECT COUNT(*) FROM contradictions WHERE status = 'pending'")
            barriers = self._count("SELECT COUNT(*) FROM barriers")
            model = migrate.stored_model(self._conn)
        return MemoryStatus(
            mode=self.embeddings.mode,
            embedding_model=model,
            dimensions=self.index.dims,
            facts_active=int(counts.get("active", 0)),
            facts_superseded=int(counts.get("superseded", 0)),
            facts_forgotten=int(counts.get("forgotten", 0)),
            missing_vectors=self.missing_vectors(),
            episodes=episode_count,
            pending_contradictions=pending,
            barriers=barriers,
            consecutive_failures=self.embeddings.consecutive_failures,
            next_retry_in_s=self.embeddings.retry_in(),
            last_error=self.vector_note or self.embeddings.last_error,
        )

    def _count(self, sql: str) -> int:
        return int(self._conn.execute(sql).fetchone()[0])

    def query(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """A read for the maintenance jobs and the operator API (writes go through `transaction`)."""
        with self._lock:
            return list(self._conn.execute(sql, params).fetchall())

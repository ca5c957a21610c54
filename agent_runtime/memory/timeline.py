"""Questions about the past: search over every version of the facts, not only the current ones.

Ordinary search returns active facts only. Here a query also meets the superseded versions,
by their words and by their kept embeddings, and each fact found brings its whole chain of
versions (what it replaced, what replaced it). Each version carries its validity interval:
valid from its saving, until the saving of the version that replaced it.

- `history`: every version of the chains found, newest first within a chain;
- `as_of`: only the versions that were current at that time (one per chain at most).
Forgotten facts are never returned: they have no text and no embedding any more.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from agent_runtime.memory.embeddings import search_floor
from agent_runtime.memory.models import Fact, FactStatus, FactVersion
from agent_runtime.memory.scripts import index_text, query_text
from agent_runtime.memory.text import tokens

if TYPE_CHECKING:
    from agent_runtime.memory.store import MemoryStore

# Superseded versions scanned by words per query: the newest ones.
MAX_SCANNED = 5000


def utc(moment: str) -> datetime:
    """An ISO 8601 date or time; without a zone, UTC. Raises ValueError naming the text."""
    try:
        parsed = datetime.fromisoformat(moment.strip())
    except ValueError:
        raise ValueError(f"as_of {moment!r} is not an ISO 8601 date or time (e.g. 2025-05-01)") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _word_score(query: set[str], text: str) -> float:
    found = query & set(tokens(index_text(text)))
    return len(found) / len(query) if query else 0.0


def _superseded_matches(
    store: MemoryStore, query: str, k: int, scopes: Sequence[str] | None
) -> dict[int, float]:
    wanted = set(tokens(query_text(query)))
    scope_clause, params = "", []
    if scopes is not None:
        scope_clause = f" AND f.scope IN ({', '.join('?' * len(scopes))})"
        params = list(scopes)
    rows = store.query(
        f"SELECT f.id, f.text FROM facts f WHERE f.status = 'superseded'{scope_clause} "
        "ORDER BY f.id DESC LIMIT ?",
        [*params, MAX_SCANNED],
    )
    scores = {int(row[0]): _word_score(wanted, str(row[1])) for row in rows}
    vector = store.embeddings.embed_query(query)
    if vector is not None:
        floor = search_floor(store.config, store.embeddings.embedder)
        close = store.query(
            "SELECT f.id, 1 - vec_distance_cosine(e.embedding, ?) FROM facts f "
            f"JOIN fact_embeddings e ON e.fact_id = f.id WHERE f.status = 'superseded'{scope_clause} "
            "AND length(e.embedding) = length(?) ORDER BY 2 DESC LIMIT ?",
            [vector, *params, vector, k],
        )
        for fact_id, similarity in close:
            if float(similarity) >= floor:
                scores[int(fact_id)] = max(scores.get(int(fact_id), 0.0), float(similarity))
    return {fact_id: score for fact_id, score in scores.items() if score > 0}


def _chain_versions(chain: list[Fact], score: float) -> list[FactVersion]:
    versions = []
    for position, fact in enumerate(chain):
        newer = chain[position + 1] if position + 1 < len(chain) else None
        until = newer.created_at if newer is not None else None
        if until is None and fact.status is FactStatus.SUPERSEDED:
            until = fact.updated_at
        versions.append(
            FactVersion(
                fact=fact,
                valid_from=fact.created_at,
                valid_until=until,
                replaced_by=newer.id if newer is not None else fact.superseded_by,
                current=fact.status is FactStatus.ACTIVE,
                score=round(score, 4),
            )
        )
    return versions[::-1]


def search_versions(
    store: MemoryStore,
    query: str,
    k: int = 8,
    *,
    as_of: datetime | None = None,
    scopes: Sequence[str] | None = None,
) -> list[FactVersion]:
    """Versions of the facts matching the query (see the module docstring), best chains first."""
    found: dict[int, float] = {
        hit.fact.id: hit.score for hit in store.search(query, k, record_access=False, scopes=scopes)
    }
    for fact_id, score in _superseded_matches(store, query, k, scopes).items():
        found[fact_id] = max(found.get(fact_id, 0.0), score)
    seen: set[int] = set()
    out: list[FactVersion] = []
    chains = 0
    for fact_id, score in sorted(found.items(), key=lambda item: -item[1]):
        if fact_id in seen or chains >= k:
            continue
        chain = [fact for fact in store.history(fact_id) if fact.status is not FactStatus.FORGOTTEN]
        seen |= {fact.id for fact in chain}
        versions = _chain_versions(chain, score)
        if as_of is not None:
            versions = [version for version in versions if version.valid_at(as_of)]
        if versions:
            chains += 1
            out += versions
    return out

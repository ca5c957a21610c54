"""Row-level writes of the fact store, run inside the caller's transaction.

A fact's row and its place in the indexes (vectors, keywords, category centroid) always change
together, here.
"""

from __future__ import annotations

from agent_runtime.memory import truth
from agent_runtime.memory.index import FactIndex
from agent_runtime.memory.models import INITIAL_SALIENCE, PRECEDENCE, FactSource, FactStatus
from agent_runtime.memory.records import Row, dump_ids, load_ids

REINFORCE = 0.1


def insert_fact(
    index: FactIndex, candidate: truth.Candidate, category_id: int, now: str, supersedes: int | None = None
) -> int:
    salience = candidate.salience if candidate.salience is not None else INITIAL_SALIENCE[candidate.source]
    cursor = index.conn.execute(
        "INSERT INTO facts(text, content_key, category_id, subject, source, status, created_at, updated_at, "
        "salience, turn_ids, supersedes, scope) VALUES (?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?)",
        (
            candidate.text,
            candidate.key,
            category_id,
            candidate.subject,
            candidate.source.value,
            now,
            now,
            max(0.0, min(1.0, salience)),
            dump_ids(candidate.turn_ids),
            supersedes,
            candidate.scope,
        ),
    )
    fact_id = int(cursor.lastrowid or 0)
    index.add(fact_id, candidate.text, category_id, candidate.vector)
    return fact_id


def reinforce_fact(index: FactIndex, row: Row, candidate: truth.Candidate, now: str) -> None:
    """A repeated fact: fresher, more salient, with the new turns and the better source."""
    source = FactSource(row["source"])
    if PRECEDENCE[candidate.source] > PRECEDENCE[source]:
        source = candidate.source
    turn_ids = load_ids(row["turn_ids"]) + candidate.turn_ids
    index.conn.execute(
        "UPDATE facts SET updated_at = ?, salience = MIN(1.0, salience + ?), turn_ids = ?, source = ?, "
        "subject = COALESCE(subject, ?) WHERE id = ?",
        (now, REINFORCE, dump_ids(turn_ids), source.value, candidate.subject, row["id"]),
    )


def retire_fact(
    index: FactIndex, row: Row, status: FactStatus, now: str, superseded_by: int | None = None
) -> None:
    """Take a fact out of search; what disputed it is moot once a newer fact replaced it."""
    index.remove(row["id"], row["category_id"], keep_embedding=status is FactStatus.SUPERSEDED)
    truth.dismiss_contradictions(index.conn, row["id"], now)
    index.conn.execute(
        "UPDATE facts SET status = ?, superseded_by = ?, updated_at = ? WHERE id = ?",
        (status.value, superseded_by, now, row["id"]),
    )

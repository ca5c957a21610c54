"""Pending contradictions and the operator's decisions on them, inside the caller's transaction.

keep "old": the stored fact stays and the claim is barred (like a forgotten fact, it will not be
proposed again by extraction). keep "new": the claim becomes a fact, with its original source
and turns, and supersedes the stored one (if that one is still active).
"""

from __future__ import annotations

from agent_runtime.memory import truth
from agent_runtime.memory.index import FactIndex
from agent_runtime.memory.models import Contradiction, ContradictionStatus, FactSource, FactStatus
from agent_runtime.memory.records import (
    CONTRADICTION_COLUMNS,
    CONTRADICTION_FROM,
    Row,
    contradiction_from_row,
    load_ids,
)
from agent_runtime.memory.sqlite import Connection
from agent_runtime.memory.writes import insert_fact, retire_fact


class ContradictionNotFound(LookupError):
    def __init__(self, contradiction_id: int) -> None:
        super().__init__(f"no pending contradiction with id {contradiction_id}")


def listing(conn: Connection, status: ContradictionStatus | None) -> list[Contradiction]:
    where, params = ("WHERE k.status = ?", (status.value,)) if status is not None else ("", ())
    rows = conn.execute(
        f"SELECT {CONTRADICTION_COLUMNS} FROM {CONTRADICTION_FROM} {where} ORDER BY k.id", params
    ).fetchall()
    return [contradiction_from_row(row) for row in rows]


def pending(conn: Connection, contradiction_id: int) -> Row:
    row: Row | None = conn.execute(
        "SELECT * FROM contradictions WHERE id = ? AND status = 'pending'", (contradiction_id,)
    ).fetchone()
    if row is None:
        raise ContradictionNotFound(contradiction_id)
    return row


def keep_old(conn: Connection, row: Row, vector: bytes | None, now: str) -> None:
    truth.add_barrier(conn, row["content_key"], vector, None, f"contradiction {row['id']} rejected", now)
    conn.execute(
        "UPDATE contradictions SET status = 'resolved', resolution = 'kept_old', resolved_at = ? WHERE id = ?",
        (now, row["id"]),
    )


def keep_new(index: FactIndex, row: Row, vector: bytes | None, now: str) -> int:
    candidate = truth.Candidate(
        text=row["text"],
        key=row["content_key"],
        category=row["category"],
        source=FactSource(row["source"]),
        subject=row["subject"],
        turn_ids=load_ids(row["turn_ids"]),
        vector=vector,
    )
    target = truth.active_fact(index.conn, row["fact_id"])
    category_id = index.category_id(candidate.category)
    new_id = insert_fact(index, candidate, category_id, now, supersedes=target["id"] if target else None)
    if target is not None:
        retire_fact(index, target, FactStatus.SUPERSEDED, now, superseded_by=new_id)
    index.conn.execute(
        "UPDATE contradictions SET status = 'resolved', resolution = 'kept_new', resolved_at = ?, "
        "new_fact_id = ? WHERE id = ?",
        (now, new_id, row["id"]),
    )
    return new_id


def fetch(conn: Connection, contradiction_id: int) -> Contradiction:
    row = conn.execute(
        f"SELECT {CONTRADICTION_COLUMNS} FROM {CONTRADICTION_FROM} WHERE k.id = ?", (contradiction_id,)
    ).fetchone()
    return contradiction_from_row(row)

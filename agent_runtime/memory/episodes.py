"""Episodes: the summary of a compacted stretch of conversation, with its time range and turn
ids, so what left the context window stays findable (the raw turns stay in history/).

Episodes are few (one per compaction), so their vectors are compared exhaustively in SQL.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from agent_runtime.memory.models import Episode, EpisodeHit
from agent_runtime.memory.records import Row, dump_ids, episode_from_row
from agent_runtime.memory.sqlite import Connection
from agent_runtime.memory.text import fts_query

COLUMNS = "id, start_at, end_at, turn_ids, summary, created_at"


def insert(
    conn: Connection,
    start: str,
    end: str,
    turn_ids: Sequence[str],
    summary: str,
    vector: bytes | None,
    now: str,
) -> int:
    cursor = conn.execute(
        "INSERT INTO episodes(start_at, end_at, turn_ids, summary, created_at, embedding) VALUES (?, ?, ?, ?, ?, ?)",
        (start, end, dump_ids(turn_ids), summary, now, vector),
    )
    episode_id = int(cursor.lastrowid or 0)
    conn.execute("INSERT INTO episode_fts(rowid, summary) VALUES (?, ?)", (episode_id, summary))
    return episode_id


def get(conn: Connection, episode_id: int) -> Episode | None:
    row: Row | None = conn.execute(f"SELECT {COLUMNS} FROM episodes WHERE id = ?", (episode_id,)).fetchone()
    return episode_from_row(row) if row is not None else None


def recent(conn: Connection, limit: int) -> list[Episode]:
    rows = conn.execute(f"SELECT {COLUMNS} FROM episodes ORDER BY id DESC LIMIT ?", (limit,)).fetchall()
    return [episode_from_row(row) for row in rows]


def search(
    conn: Connection,
    query: str,
    vector: bytes | None,
    k: int,
    vector_weight: float,
    keyword_weight: float,
    min_similarity: float = 0.0,
) -> list[EpisodeHit]:
    """Episodes by the hybrid score (no decay); those matching no word and less similar than
    `min_similarity` are left out."""
    keyword: dict[int, float] = {}
    expression = fts_query(query)
    if expression is not None:
        rows = conn.execute(
            "SELECT rowid, -bm25(episode_fts) FROM episode_fts WHERE episode_fts MATCH ? ORDER BY rank LIMIT ?",
            (expression, max(k * 4, 20)),
        ).fetchall()
        keyword = {int(row[0]): max(float(row[1]), 0.0) for row in rows}
    similar: dict[int, float] = {}
    if vector is not None:
        rows = conn.execute(
            "SELECT id, vec_distance_cosine(embedding, ?) AS d FROM episodes "
            "WHERE embedding IS NOT NULL AND d IS NOT NULL ORDER BY d LIMIT ?",
            (vector, max(k * 4, 20)),
        ).fetchall()
        similar = {int(row[0]): max(0.0, 1.0 - float(row[1])) for row in rows}
    best_keyword = max(keyword.values(), default=0.0) or 1.0
    scores: dict[int, float] = {}
    for episode_id in set(keyword) | set(similar):
        keyword_part = keyword.get(episode_id, 0.0) / best_keyword
        if keyword_part == 0.0 and similar.get(episode_id, 0.0) < min_similarity:
            continue
        if vector is None:
            scores[episode_id] = keyword_part
        else:
            scores[episode_id] = vector_weight * similar.get(episode_id, 0.0) + keyword_weight * keyword_part
    ranked = sorted(scores.items(), key=lambda item: item[1], reverse=True)[:k]
    if not ranked:
        return []
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM episodes WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps([episode_id for episode_id, _ in ranked]),),
    ).fetchall()
    by_id = {int(row["id"]): episode_from_row(row) for row in rows}
    return [EpisodeHit(episode=by_id[i], score=s) for i, s in ranked if i in by_id]


def missing_vectors(conn: Connection, limit: int) -> list[tuple[int, str]]:
    rows = conn.execute(
        "SELECT id, summary FROM episodes WHERE embedding IS NULL ORDER BY id LIMIT ?", (limit,)
    ).fetchall()
    return [(int(row[0]), str(row[1])) for row in rows]


def set_vector(conn: Connection, episode_id: int, vector: bytes) -> None:
    conn.execute("UPDATE episodes SET embedding = ? WHERE id = ? AND embedding IS NULL", (vector, episode_id))

"""Truth over time: which stored fact a new one repeats, replaces or disputes, and the
barriers that keep forgotten facts from coming back.

Same subject. Two facts are about the same subject when
1. the caller names it: both carry the same `subject` key (e.g. "user.home_city"), or the new
   fact says which fact it `supersedes`; or
2. without keys (or when only one fact has one), they are in the same category, their
   embeddings have a cosine similarity of at least `attribute_similarity` (0.5 by default), and
   what differs is the value of one attribute of one thing (`attributes.one_attribute_changed`):
   "The user lives in Berlin" / "The user lives in Paris", never "Invoice 1001 ..." /
   "Invoice 1002 ...". Two facts with different keys are never the same subject.
Similarity alone never makes the subject: a wrong guess would take a distinct fact out of
search, so callers that know the subject (the extraction model, the agent) should pass it.

Disputed by meaning. When no rule above finds the subject and the embedding model carries
meaning, a fact of another rank (in any category) whose similarity is at least the model's
contradiction threshold, that names no other identified thing (`attributes.distinct_things`)
nor gives another value of a relation that holds many ("speaks German" / "speaks Italian"),
and that states a different value (`disagreement`: numbers, a negation, names) is taken as on
the same subject: "The user drinks coffee every morning"
(user_stated) / "The user never drinks coffee" (inferred). Two facts of the same rank are
left side by side: a guess does not retire what a source of equal standing said.

Near-duplicates. A new fact repeats a stored one when their normalized wording is equal
(`text.content_key`), or when their similarity is at least `duplicate_similarity` and one only
adds or drops qualifiers to the other (`text.is_refinement`). A repeat reinforces the stored
fact instead of adding a row.

Precedence. A newer fact replaces an older one on the same subject when its source ranks at
least as high (`models.PRECEDENCE`); otherwise it is recorded as a pending contradiction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_runtime.memory.attributes import another_value_of_a_set, distinct_things, one_attribute_changed
from agent_runtime.memory.disagreement import disagreement
from agent_runtime.memory.forgetting import ForgottenMatcher
from agent_runtime.memory.models import PRECEDENCE, FactSource, MemoryConfig
from agent_runtime.memory.records import FACT_COLUMNS, FACT_FROM, Row, dump_ids
from agent_runtime.memory.sqlite import Connection
from agent_runtime.memory.text import is_refinement

MAX_SUBJECT_CHARS = 120


def normalize_subject(subject: str | None) -> str | None:
    if subject is None:
        return None
    cleaned = " ".join(subject.lower().split())[:MAX_SUBJECT_CHARS]
    return cleaned or None


@dataclass
class Candidate:
    """A fact about to be saved, with everything computed before the write transaction."""

    text: str
    key: str
    category: str
    source: FactSource
    subject: str | None = None
    turn_ids: list[str] = field(default_factory=list)
    salience: float | None = None
    vector: bytes | None = None
    supersedes: int | None = None
    redacted: tuple[str, ...] = ()
    scope: str = ""


def active_fact(conn: Connection, fact_id: int) -> Row | None:
    row: Row | None = conn.execute(
        f"SELECT {FACT_COLUMNS} FROM {FACT_FROM} WHERE f.id = ? AND f.status = 'active'", (fact_id,)
    ).fetchone()
    return row


def duplicate_of(
    conn: Connection, candidate: Candidate, neighbors: list[tuple[int, float]], config: MemoryConfig
) -> Row | None:
    """The active fact the candidate repeats, if any."""
    row: Row | None = conn.execute(
        f"SELECT {FACT_COLUMNS} FROM {FACT_FROM} WHERE f.content_key = ? AND f.status = 'active' "
        "AND f.scope = ? ORDER BY f.id LIMIT 1",
        (candidate.key, candidate.scope),
    ).fetchone()
    if row is not None:
        return row
    for fact_id, similarity in neighbors:
        if similarity < config.duplicate_similarity:
            break
        near = active_fact(conn, fact_id)
        if (
            near is not None
            and near["scope"] == candidate.scope
            and is_refinement(candidate.text, near["text"])
        ):
            return near
    return None


def same_subject(
    conn: Connection, candidate: Candidate, neighbors: list[tuple[int, float]], config: MemoryConfig
) -> Row | None:
    """The active fact on the candidate's subject, if any (see the module's rules)."""
    if candidate.supersedes is not None:
        return active_fact(conn, candidate.supersedes)
    if candidate.subject:
        row: Row | None = conn.execute(
            f"SELECT {FACT_COLUMNS} FROM {FACT_FROM} WHERE f.subject = ? AND f.status = 'active' "
            "AND f.scope = ? ORDER BY f.id DESC LIMIT 1",
            (candidate.subject, candidate.scope),
        ).fetchone()
        if row is not None:
            return row
    for fact_id, similarity in neighbors:
        if similarity < config.attribute_similarity:
            break
        near = active_fact(conn, fact_id)
        if near is None or near["scope"] != candidate.scope:
            continue
        if candidate.subject and near["subject"] and near["subject"] != candidate.subject:
            continue
        if not one_attribute_changed(near["text"], candidate.text):
            continue
        return near
    return None


@dataclass(frozen=True)
class Dispute:
    """An active fact the candidate disputes by meaning: what differs, and how close they are."""

    target: Row
    differs_on: str
    similarity: float


def disputed_by_meaning(
    conn: Connection, candidate: Candidate, neighbors: list[tuple[int, float]], threshold: float
) -> Dispute | None:
    """The closest active fact of another rank, at least `threshold` similar, that states a
    different value (see the module's rules). `neighbors`: across every category, best first."""
    for fact_id, similarity in neighbors:
        if similarity < threshold:
            break
        near = active_fact(conn, fact_id)
        if near is None or near["scope"] != candidate.scope:
            continue
        if candidate.subject and near["subject"]:
            continue  # both keyed: the keys already said these are different subjects
        if PRECEDENCE[FactSource(near["source"])] == PRECEDENCE[candidate.source]:
            continue
        if distinct_things(near["text"], candidate.text) or another_value_of_a_set(
            near["text"], candidate.text
        ):
            continue
        differs_on = disagreement(candidate.text, near["text"])
        if differs_on is not None:
            return Dispute(near, differs_on, similarity)
    return None


# Barriers


def find_barrier(
    conn: Connection, key: str, vector: bytes | None, config: MemoryConfig, text: str = ""
) -> int | None:
    """The barrier a candidate runs into: same normalized wording, a very close embedding, or
    a text that restates the forgotten fact's values or words (`forgetting.ForgottenMatcher`)."""
    row = conn.execute("SELECT id FROM barriers WHERE content_key = ? LIMIT 1", (key,)).fetchone()
    if row is not None:
        return int(row[0])
    if vector is not None:
        row = conn.execute(
            "SELECT id FROM barriers WHERE embedding IS NOT NULL AND vec_distance_cosine(embedding, ?) <= ? LIMIT 1",
            (vector, 1.0 - config.barrier_similarity),
        ).fetchone()
        if row is not None:
            return int(row[0])
    stated = ForgottenMatcher.load(conn).barriers_stated(text) if text else []
    return stated[0] if stated else None


def lift_barriers(
    conn: Connection, key: str, vector: bytes | None, config: MemoryConfig, text: str = ""
) -> int:
    """Remove the barriers a candidate matches (a person restated the fact on purpose)."""
    removed = conn.execute("DELETE FROM barriers WHERE content_key = ?", (key,)).rowcount
    if vector is not None:
        removed += conn.execute(
            "DELETE FROM barriers WHERE embedding IS NOT NULL AND vec_distance_cosine(embedding, ?) <= ?",
            (vector, 1.0 - config.barrier_similarity),
        ).rowcount
    for barrier in ForgottenMatcher.load(conn).barriers_stated(text) if text else []:
        removed += conn.execute("DELETE FROM barriers WHERE id = ?", (barrier,)).rowcount
    return int(removed)


def add_barrier(
    conn: Connection,
    key: str,
    vector: bytes | None,
    fact_id: int | None,
    reason: str,
    now: str,
    words: str | None = None,
) -> int:
    """`words`: the fact's fingerprint (`forgetting.fingerprint`), to recognise it in other text."""
    cursor = conn.execute(
        "INSERT INTO barriers(content_key, embedding, fact_id, reason, created_at, words) VALUES (?, ?, ?, ?, ?, ?)",
        (key, vector, fact_id, reason, now, words),
    )
    return int(cursor.lastrowid or 0)


# Contradictions


def record_contradiction(conn: Connection, target: Row, candidate: Candidate, now: str) -> int:
    """A pending contradiction of `target` by `candidate`; the same claim is recorded once."""
    existing = conn.execute(
        "SELECT id FROM contradictions WHERE fact_id = ? AND content_key = ? AND status = 'pending'",
        (target["id"], candidate.key),
    ).fetchone()
    if existing is not None:
        return int(existing[0])
    cursor = conn.execute(
        "INSERT INTO contradictions(fact_id, text, content_key, category, subject, source, turn_ids, "
        "embedding, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
        (
            target["id"],
            candidate.text,
            candidate.key,
            candidate.category,
            candidate.subject,
            candidate.source.value,
            dump_ids(candidate.turn_ids),
            candidate.vector,
            now,
        ),
    )
    return int(cursor.lastrowid or 0)


def dismiss_contradictions(conn: Connection, fact_id: int, now: str) -> None:
    conn.execute(
        "UPDATE contradictions SET status = 'dismissed', resolved_at = ? WHERE fact_id = ? AND status = 'pending'",
        (now, fact_id),
    )

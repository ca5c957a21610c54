"""Answers of settled model calls, kept by the agent's idempotency key for a bounded time.

An agent sends one key per logical model call and the same key when it makes that call again
(its reply stream broke because the orchestrator was killed after the ledger settled the call).
The gateway records the answer in the same transaction as the ledger's settlement, so a call
that was charged always has its answer here; a call made again with a settled key is answered
from this record, without calling the provider and without a second ledger row.

Keys are per agent: the same key sent by another agent is another call.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta

from orchestrator.gateway.ledger import timestamp
from orchestrator.gateway.models import ChatCompletion, ChatCompletionRequest
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS gateway_settled_answers (
    agent TEXT NOT NULL,
    key TEXT NOT NULL,
    at TEXT NOT NULL,
    usage_id INTEGER NOT NULL,
    request_sha256 TEXT NOT NULL,
    route_model TEXT NOT NULL,
    completion TEXT NOT NULL,
    PRIMARY KEY (agent, key)
);
CREATE INDEX IF NOT EXISTS gateway_settled_answers_at ON gateway_settled_answers(at);
"""
# An agent makes a cut call again within its outage wait (90 s) of the cut; an hour covers that
# with room to spare, and bounds the table (every keyed call writes its answer here) to an
# hour of a fleet's answers.
KEEP_FOR = timedelta(hours=1)
KEY_MAX = 128


@dataclass(frozen=True)
class SettledAnswer:
    """What a call with this key was answered, and by which of the fleet's models."""

    usage_id: int
    request_sha256: str
    route_model: str
    completion: ChatCompletion


def request_digest(request: ChatCompletionRequest) -> str:
    """The request as the provider would get it, minus how it is delivered (streamed or not):
    a retry may differ only there."""
    body = request.model_dump_json(exclude={"stream", "stream_options"}, exclude_unset=True)
    return hashlib.sha256(body.encode()).hexdigest()


def usable_key(value: str | None) -> str | None:
    """An idempotency key as sent, or None for a missing or unusable one (the call then has none)."""
    key = (value or "").strip()
    return key if 0 < len(key) <= KEY_MAX and key.isprintable() else None


class SettledAnswers:
    def __init__(self, db: Database, keep_for: timedelta = KEEP_FOR) -> None:
        self._db = db
        self._keep_for = keep_for
        db.ensure_schema(SCHEMA)

    def find(self, agent: str, key: str, now: datetime) -> SettledAnswer | None:
        row = self._db.query_one(
            "SELECT usage_id, request_sha256, route_model, completion FROM gateway_settled_answers "
            "WHERE agent = ? AND key = ? AND at >= ?",
            (agent, key, timestamp(now - self._keep_for)),
        )
        if row is None:
            return None
        return SettledAnswer(
            usage_id=int(row["usage_id"]),
            request_sha256=str(row["request_sha256"]),
            route_model=str(row["route_model"]),
            completion=ChatCompletion.model_validate_json(row["completion"]),
        )

    def recorder(self, agent: str, key: str, request_sha256: str, now: datetime) -> RecordAnswer:
        """A writer for the ledger's settlement transaction (see `RecordAnswer`)."""
        return RecordAnswer(agent, key, request_sha256, now, now - self._keep_for)

    def count(self, agent: str | None = None) -> int:
        where, params = ("WHERE agent = ?", (agent,)) if agent else ("", ())
        row = self._db.query_one(f"SELECT COUNT(*) AS n FROM gateway_settled_answers {where}", params)
        return int(row["n"]) if row is not None else 0


@dataclass(frozen=True)
class RecordAnswer:
    """Writes one settled answer (and drops expired ones) inside the caller's transaction."""

    agent: str
    key: str
    request_sha256: str
    at: datetime
    expired_before: datetime

    def __call__(
        self, conn: sqlite3.Connection, usage_id: int, route_model: str, completion: ChatCompletion
    ) -> None:
        conn.execute("DELETE FROM gateway_settled_answers WHERE at < ?", (timestamp(self.expired_before),))
        conn.execute(
            "INSERT OR REPLACE INTO gateway_settled_answers(agent, key, at, usage_id, request_sha256, "
            "route_model, completion) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                self.agent,
                self.key,
                timestamp(self.at),
                usage_id,
                self.request_sha256,
                route_model,
                completion.model_dump_json(exclude_unset=True),
            ),
        )

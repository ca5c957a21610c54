"""Who may talk to the fleet through a chat channel: one-time pairing codes and the people they
paired. Owns the tables `chat_pairing_codes` and `chat_people`.

A code is kept only as its SHA-256: the database never holds one that could still be used.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, computed_field

from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS chat_pairing_codes (
    digest TEXT PRIMARY KEY,
    channel TEXT NOT NULL,
    agent TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chat_people (
    channel TEXT NOT NULL,
    user_id TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    agent TEXT,
    paired_at TEXT NOT NULL,
    PRIMARY KEY (channel, user_id)
);
"""
# Letters and digits that cannot be mistaken for one another when typed from a screen.
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 8


class PairingCode(BaseModel):
    """A code the operator hands to one person; it pairs the first sender who sends it in time."""

    channel: str
    code: str
    agent: str | None
    expires_at: datetime


class Person(BaseModel):
    """A paired person: `principal` is how items and memory name them."""

    channel: str
    user_id: str
    name: str
    agent: str | None
    paired_at: datetime

    @computed_field  # type: ignore[prop-decorator]
    @property
    def principal(self) -> str:
        return person_principal(self.channel, self.user_id)


def person_principal(channel: str, user_id: str) -> str:
    return f"person:{channel}:{user_id}"


def _digest(channel: str, code: str) -> str:
    return hashlib.sha256(f"{channel}\0{code.strip().upper()}".encode()).hexdigest()


class PeopleStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def issue(self, channel: str, agent: str | None, ttl: timedelta, now: datetime) -> PairingCode:
        code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
        expires = now + ttl
        self._db.execute(
            "INSERT INTO chat_pairing_codes(digest, channel, agent, created_at, expires_at) VALUES (?,?,?,?,?)",
            (_digest(channel, code), channel, agent, now.isoformat(), expires.isoformat()),
        )
        return PairingCode(channel=channel, code=code, agent=agent, expires_at=expires)

    def redeem(self, channel: str, code: str, user_id: str, name: str, now: datetime) -> Person | None:
        """Pair the sender when `code` is a live code of this channel (it is used up); None otherwise."""
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM chat_pairing_codes WHERE expires_at < ?", (now.isoformat(),))
            row = conn.execute(
                "SELECT agent FROM chat_pairing_codes WHERE digest = ? AND channel = ?",
                (_digest(channel, code), channel),
            ).fetchone()
            if row is None:
                return None
            conn.execute("DELETE FROM chat_pairing_codes WHERE digest = ?", (_digest(channel, code),))
            conn.execute(
                "INSERT INTO chat_people(channel, user_id, name, agent, paired_at) VALUES (?,?,?,?,?)"
                " ON CONFLICT(channel, user_id) DO UPDATE SET name = excluded.name,"
                " agent = COALESCE(excluded.agent, chat_people.agent)",
                (channel, user_id, name, row["agent"], now.isoformat()),
            )
        return self.get(channel, user_id)

    def get(self, channel: str, user_id: str) -> Person | None:
        row = self._db.query_one(
            "SELECT * FROM chat_people WHERE channel = ? AND user_id = ?", (channel, user_id)
        )
        return _person(row) if row else None

    def switch(self, channel: str, user_id: str, agent: str) -> None:
        self._db.execute(
            "UPDATE chat_people SET agent = ? WHERE channel = ? AND user_id = ?", (agent, channel, user_id)
        )

    def unpair(self, channel: str, user_id: str) -> bool:
        cursor = self._db.execute(
            "DELETE FROM chat_people WHERE channel = ? AND user_id = ?", (channel, user_id)
        )
        return cursor.rowcount > 0

    def people(self, channel: str | None = None) -> list[Person]:
        where, params = (" WHERE channel = ?", (channel,)) if channel else ("", ())
        rows = self._db.query(f"SELECT * FROM chat_people{where} ORDER BY channel, paired_at", params)
        return [_person(row) for row in rows]


def _person(row: Any) -> Person:
    return Person.model_validate(
        {key: row[key] for key in ("channel", "user_id", "name", "agent", "paired_at")}
    )

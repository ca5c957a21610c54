"""Bearer tokens: one per agent, minted when its unit is created, and one for the operator.

Only SHA-256 digests are stored; comparison is constant-time. Each token belongs to a principal
of one kind (the operator, or an agent by name), and kinds are separate namespaces: the store's
key is (kind, name), so minting an agent's token can never replace the operator's, whatever the
agent is called, and a token identifies as an agent or as the operator, never as a name alone.
Agent names that mean something else (`operator`, ...) are refused here as well as by `validate`.
Tokens of the single namespace of release 0.1.0 are moved over by orchestrator.state.migrations.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Literal

from orchestrator.config.reserved import reserved_reason
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS principal_tokens (
    kind TEXT NOT NULL CHECK (kind IN ('operator', 'agent')),
    name TEXT NOT NULL,
    digest TEXT NOT NULL UNIQUE,
    PRIMARY KEY (kind, name)
);
"""
OPERATOR = "operator"
"""The operator's name as a sender and author; its token lives in the operator namespace."""

PrincipalKind = Literal["operator", "agent"]


class ReservedName(ValueError):
    """An agent token was asked for a name that belongs to another principal or a route."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who made a request: the operator, or one agent by name."""

    name: str
    kind: PrincipalKind = "agent"

    @property
    def is_operator(self) -> bool:
        return self.kind == "operator"


OPERATOR_PRINCIPAL = Principal(OPERATOR, "operator")


class TokenStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)
        self._cache: dict[tuple[PrincipalKind, str], str] = {}
        self._reload()

    def _reload(self) -> None:
        rows = self._db.query("SELECT kind, name, digest FROM principal_tokens")
        self._cache = {(row["kind"], row["name"]): row["digest"] for row in rows}

    def _store(self, kind: PrincipalKind, name: str) -> str:
        token = secrets.token_urlsafe(32)
        digest = _digest(token)
        self._db.execute(
            "INSERT INTO principal_tokens(kind, name, digest) VALUES (?, ?, ?) "
            "ON CONFLICT(kind, name) DO UPDATE SET digest = excluded.digest",
            (kind, name, digest),
        )
        self._cache[(kind, name)] = digest
        return token

    def mint_operator(self) -> str:
        """A new operator token; the previous one stops working."""
        return self._store("operator", OPERATOR)

    def adopt_operator(self, token: str) -> None:
        """Take an operator token minted before (kept across restarts) as the operator's."""
        digest = _digest(token)
        self._db.execute(
            "INSERT INTO principal_tokens(kind, name, digest) VALUES ('operator', ?, ?) "
            "ON CONFLICT(kind, name) DO UPDATE SET digest = excluded.digest",
            (OPERATOR, digest),
        )
        self._cache[("operator", OPERATOR)] = digest

    def mint(self, agent: str) -> str:
        """A new token for an agent; its previous one stops working. Reserved names are refused."""
        if reason := reserved_reason(agent):
            raise ReservedName(f"agent name {agent!r} is reserved ({reason})")
        return self._store("agent", agent)

    def revoke(self, agent: str) -> None:
        """Forget an agent's token (the operator's is never revoked this way)."""
        self._db.execute("DELETE FROM principal_tokens WHERE kind = 'agent' AND name = ?", (agent,))
        self._cache.pop(("agent", agent), None)

    def has(self, agent: str) -> bool:
        return ("agent", agent) in self._cache

    def identify(self, token: str) -> Principal | None:
        """The principal owning this token, compared in constant time against every digest."""
        offered = _digest(token)
        found: tuple[PrincipalKind, str] | None = None
        for key, digest in self._cache.items():
            if hmac.compare_digest(offered, digest):
                found = key
        if found is None:
            return None
        kind, name = found
        return Principal(name, kind)


def forget_all_tokens(db: Database) -> None:
    """Drop every token digest: for a copy of state.db that leaves the machine (a backup); the
    restored fleet mints new tokens when its units are created."""
    db.ensure_schema(SCHEMA)
    db.execute("DELETE FROM principal_tokens")

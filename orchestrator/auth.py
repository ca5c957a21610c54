"""Bearer tokens: one per agent, minted when its unit is created, and one for the operator.

Only SHA-256 digests are stored; comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    principal TEXT PRIMARY KEY,
    digest TEXT NOT NULL
);
"""
OPERATOR = "operator"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who made a request: the operator, or one agent by name."""

    name: str

    @property
    def is_operator(self) -> bool:
        return self.name == OPERATOR


class TokenStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)
        self._cache: dict[str, str] = {}
        self._reload()

    def _reload(self) -> None:
        self._cache = {row["principal"]: row["digest"] for row in self._db.query("SELECT * FROM tokens")}

    def mint(self, principal: str) -> str:
        token = secrets.token_urlsafe(32)
        self._db.execute(
            "INSERT INTO tokens(principal, digest) VALUES (?, ?) "
            "ON CONFLICT(principal) DO UPDATE SET digest = excluded.digest",
            (principal, _digest(token)),
        )
        self._cache[principal] = _digest(token)
        return token

    def revoke(self, principal: str) -> None:
        self._db.execute("DELETE FROM tokens WHERE principal = ?", (principal,))
        self._cache.pop(principal, None)

    def has(self, principal: str) -> bool:
        return principal in self._cache

    def identify(self, token: str) -> Principal | None:
        """The principal owning this token, compared in constant time against every digest."""
        offered = _digest(token)
        found: str | None = None
        for principal, digest in self._cache.items():
            if hmac.compare_digest(offered, digest):
                found = principal
        return Principal(found) if found else None

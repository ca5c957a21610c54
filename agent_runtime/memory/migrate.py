"""Creating memory.db's tables, and what to do with vectors made by another embedding model.

memory.db records the embedding model and dimensions its vectors came from. Opened with a
different model, the store either drops every vector and lets the backfill re-embed each fact
(`reindex_on_model_change`, what the agent does), or leaves them alone and searches by keyword
only (what a reader such as the operator API does, which must not destroy the agent's vectors).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_runtime.memory.index import FactIndex
from agent_runtime.memory.models import MemoryConfig
from agent_runtime.memory.schema import SCHEMA_VERSION, TABLES, vector_index
from agent_runtime.memory.sqlite import Connection


@dataclass(frozen=True)
class Prepared:
    dims: int  # of the vectors in the file
    vectors_usable: bool  # False: this process must search by keyword only
    note: str | None = None


def _meta(conn: Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(row[0]) if row is not None else None


def _set_meta(conn: Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


class MemoryTooNew(ValueError):
    """memory.db was written by a later release: it is not opened, so nothing in it changes."""


def refuse_newer(conn: Connection) -> None:
    """Refuse a file whose schema version is above this runtime's, before anything writes to it."""
    has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    stored = _meta(conn, "schema_version") if has_meta else None
    if stored is not None and stored.isdigit() and int(stored) > int(SCHEMA_VERSION):
        raise MemoryTooNew(
            f"memory.db has schema version {stored}, newer than this runtime's {SCHEMA_VERSION} "
            "(written by a later release); it was left untouched"
        )


def stored_model(conn: Connection) -> str | None:
    return _meta(conn, "embedding_model") or None


def _upgrade(conn: Connection) -> None:
    """Version 2: barriers keep a fingerprint of the forgotten fact's words (`forgetting`)."""
    columns = {str(row[1]) for row in conn.execute("PRAGMA table_info(barriers)").fetchall()}
    if "words" not in columns:
        conn.execute("ALTER TABLE barriers ADD COLUMN words TEXT")
    # Facts of one person's conversations (a scope) are kept apart from the shared ones.
    if "scope" not in {str(row[1]) for row in conn.execute("PRAGMA table_info(facts)").fetchall()}:
        conn.execute("ALTER TABLE facts ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
    if _meta(conn, "schema_version") not in (None, SCHEMA_VERSION):
        _set_meta(conn, "schema_version", SCHEMA_VERSION)


def prepare(conn: Connection, config: MemoryConfig, has_embedder: bool) -> Prepared:
    """Run inside a transaction."""
    refuse_newer(conn)
    for statement in TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)
    _upgrade(conn)
    wanted_dims, wanted_model = config.dimensions, config.embedding_model or ""
    stored_dims, model = _meta(conn, "dimensions"), _meta(conn, "embedding_model") or ""
    if stored_dims is None:
        _set_meta(conn, "schema_version", SCHEMA_VERSION)
        _set_meta(conn, "dimensions", str(wanted_dims))
        _set_meta(conn, "embedding_model", wanted_model)
        conn.execute(vector_index(wanted_dims))
        return Prepared(wanted_dims, True)
    if int(stored_dims) == wanted_dims and model == wanted_model:
        return Prepared(wanted_dims, True)
    if not has_embedder:
        return Prepared(int(stored_dims), True)
    if config.reindex_on_model_change:
        FactIndex(conn, wanted_dims).reset_vectors()
        _set_meta(conn, "dimensions", str(wanted_dims))
        _set_meta(conn, "embedding_model", wanted_model)
        return Prepared(wanted_dims, True)
    note = (
        f"memory.db holds {model or 'unnamed'} vectors of {stored_dims} dimensions, "
        f"not {wanted_model or 'unnamed'} of {wanted_dims}: keyword-only search"
    )
    return Prepared(int(stored_dims), False, note)

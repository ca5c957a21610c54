"""The orchestrator's state database carries a schema version; older ones are migrated once.

`PRAGMA user_version` holds the version. Opening a database:
- with no tables yet (a new fleet): it is stamped with the current version; each subsystem then
  creates its tables as they are today;
- of an older version: a copy is taken with SQLite's online backup API into
  `.flotilla/backups/`, then every pending migration runs, in order, in one transaction with the
  new version stamp (all or nothing);
- of a newer version (written by a later release): it is refused, untouched, with a message
  that says what to do.

Release 0.1.0 wrote no version: its databases read as version 0. A migration only adds to the
tables that exist (a subsystem that never ran has no table to migrate; it creates the current
shape itself when it first runs).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path


class StateTooNew(Exception):
    """The database was written by a newer release; it is left as it is."""


@dataclass(frozen=True)
class Migration:
    version: int
    """The version the database has once this migration ran."""
    description: str
    apply: Callable[[sqlite3.Connection], None]


@dataclass(frozen=True)
class MigrationReport:
    from_version: int
    to_version: int
    applied: tuple[str, ...] = ()
    backup: Path | None = None


def table_exists(conn: sqlite3.Connection, table: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return row is not None


def add_column(conn: sqlite3.Connection, table: str, column: str, definition: str) -> None:
    """ALTER TABLE ... ADD COLUMN, when the table exists and lacks the column."""
    if not table_exists(conn, table):
        return
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
    if column not in columns:
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")


# The tables a migration creates, as they were at its version: a migration replays history, so
# it keeps its own copy of the shape instead of reading the owner's schema of today (a later
# change to that schema comes with a migration of its own).
_PRINCIPAL_TOKENS_V2 = """
CREATE TABLE IF NOT EXISTS principal_tokens (
    kind TEXT NOT NULL CHECK (kind IN ('operator', 'agent')),
    name TEXT NOT NULL,
    digest TEXT NOT NULL UNIQUE,
    PRIMARY KEY (kind, name)
);
"""
_SETTLED_ANSWERS_V5 = """
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
_AGENT_LIFECYCLE_V8 = """
CREATE TABLE IF NOT EXISTS agent_lifecycle (
    agent TEXT PRIMARY KEY,
    desired TEXT NOT NULL DEFAULT 'awake' CHECK (desired IN ('awake', 'asleep')),
    desired_since TEXT,
    hold TEXT CHECK (hold IN ('stopped', 'paused')),
    hold_since TEXT
);
"""
_AGENT_LIFECYCLE_V9 = """
CREATE TABLE IF NOT EXISTS agent_lifecycle (
    agent TEXT PRIMARY KEY,
    desired TEXT NOT NULL DEFAULT 'awake' CHECK (desired IN ('awake', 'asleep')),
    desired_since TEXT,
    hold TEXT CHECK (hold IN ('stopped', 'paused')),
    hold_since TEXT,
    restarts INTEGER NOT NULL DEFAULT 0 CHECK (restarts >= 0),
    restart_reason TEXT NOT NULL DEFAULT '',
    restarted_at TEXT,
    actual TEXT CHECK (actual IN ('absent', 'stopped', 'running')),
    actual_since TEXT
);
"""


def _stamp_release_0_1(conn: sqlite3.Connection) -> None:
    """Release 0.1.0's tables are version 1 as they are."""


def _split_token_namespaces(conn: sqlite3.Connection) -> None:
    """Tokens move from one namespace keyed by name into (kind, name): the row named `operator`
    becomes the operator's, every other row an agent's, so running agents keep their tokens.
    The old table stays as it was; nothing reads it any more."""
    if not table_exists(conn, "tokens"):
        return
    conn.execute(_PRINCIPAL_TOKENS_V2)
    conn.execute(
        "INSERT OR IGNORE INTO principal_tokens(kind, name, digest) SELECT "
        "CASE WHEN principal = 'operator' THEN 'operator' ELSE 'agent' END, principal, digest FROM tokens"
    )


def _ledger_run_ids(conn: sqlite3.Connection) -> None:
    add_column(conn, "gateway_usage", "run_id", "TEXT")


def _run_tool_calls(conn: sqlite3.Connection) -> None:
    add_column(conn, "runs", "tool_calls", "TEXT NOT NULL DEFAULT '[]'")


def _settled_answers(conn: sqlite3.Connection) -> None:
    """A fleet whose gateway has run gets the table of settled answers kept by idempotency key."""
    if not table_exists(conn, "gateway_usage"):
        return
    for statement in filter(str.strip, _SETTLED_ANSWERS_V5.split(";")):
        conn.execute(statement)


def _inbox_principals(conn: sqlite3.Connection) -> None:
    add_column(conn, "inbox", "principal", "TEXT")


def _payers(conn: sqlite3.Connection) -> None:
    add_column(conn, "inbox", "payer", "TEXT")
    add_column(conn, "gateway_usage", "payer", "TEXT")


def _desired_states(conn: sqlite3.Connection) -> None:
    """The scheduler's hibernated flag and the operator's holds become each agent's desired state
    in the lifecycle's table; the flag's columns and the holds' table go, so nothing can read a
    stale copy."""
    flagged = table_exists(conn, "heartbeat_state")
    held = table_exists(conn, "agent_controls")
    if not (flagged or held):
        return
    conn.execute(_AGENT_LIFECYCLE_V8)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(heartbeat_state)")} if flagged else set()
    if "hibernated" in columns:
        conn.execute(
            "INSERT OR IGNORE INTO agent_lifecycle(agent, desired, desired_since)"
            " SELECT agent, 'asleep', hibernated_at FROM heartbeat_state WHERE hibernated != 0"
        )
        conn.execute("ALTER TABLE heartbeat_state DROP COLUMN hibernated")
    if "hibernated_at" in columns:
        conn.execute("ALTER TABLE heartbeat_state DROP COLUMN hibernated_at")
    if held:
        conn.execute(
            "INSERT INTO agent_lifecycle(agent, hold, hold_since) SELECT agent, hold, since FROM agent_controls"
            " WHERE true ON CONFLICT(agent) DO UPDATE SET hold = excluded.hold, hold_since = excluded.hold_since"
        )
        conn.execute("DROP TABLE agent_controls")


def _restarts_in_lifecycle(conn: sqlite3.Connection) -> None:
    """The supervisor's restart counts join each agent's row of the lifecycle's table (the
    moment of the last one as ISO text, like the table's other moments); their own table goes.
    The lifecycle's table is made anew in its new shape, with room for the actual state, and its
    rows copied over."""
    had_lifecycle = table_exists(conn, "agent_lifecycle")
    had_restarts = table_exists(conn, "agent_restarts")
    if not (had_lifecycle or had_restarts):
        return
    if had_lifecycle:
        conn.execute("ALTER TABLE agent_lifecycle RENAME TO agent_lifecycle_v8")
    conn.execute(_AGENT_LIFECYCLE_V9)
    if had_lifecycle:
        conn.execute(
            "INSERT INTO agent_lifecycle(agent, desired, desired_since, hold, hold_since)"
            " SELECT agent, desired, desired_since, hold, hold_since FROM agent_lifecycle_v8"
        )
        conn.execute("DROP TABLE agent_lifecycle_v8")
    if had_restarts:
        conn.execute(
            "INSERT INTO agent_lifecycle(agent, restarts, restart_reason, restarted_at)"
            " SELECT agent, restarts, last_reason,"
            " strftime('%Y-%m-%dT%H:%M:%f', last_at, 'unixepoch') || '+00:00' FROM agent_restarts"
            " WHERE true ON CONFLICT(agent) DO UPDATE SET restarts = excluded.restarts,"
            " restart_reason = excluded.restart_reason, restarted_at = excluded.restarted_at"
        )
        conn.execute("DROP TABLE agent_restarts")


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "release 0.1.0's tables, given a version", _stamp_release_0_1),
    Migration(2, "tokens of the operator and of agents in separate namespaces", _split_token_namespaces),
    Migration(3, "ledger rows name the run that made them", _ledger_run_ids),
    Migration(4, "run records list their tool calls", _run_tool_calls),
    Migration(5, "answers of settled model calls kept by the agent's idempotency key", _settled_answers),
    Migration(6, "inbox items say which principal they came from", _inbox_principals),
    Migration(7, "inbox items and ledger rows name the peer that pays for them", _payers),
    Migration(
        8,
        "an agent's desired state (asleep or awake, the operator's hold) in the lifecycle's table",
        _desired_states,
    ),
    Migration(
        9,
        "the supervisor's restarts of each agent and its actual state in the lifecycle's table",
        _restarts_in_lifecycle,
    ),
)
CURRENT_VERSION = MIGRATIONS[-1].version


def user_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _has_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1").fetchone() is not None


def _backup(conn: sqlite3.Connection, backups: Path, version: int) -> Path:
    backups.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = backups / f"state.v{version}.{stamp}.db"
    copy = sqlite3.connect(target)
    try:
        conn.backup(copy)
    finally:
        copy.close()
    return target


def migrate_state(
    db_path: Path, backups: Path, migrations: tuple[Migration, ...] = MIGRATIONS
) -> MigrationReport:
    """Bring the database at `db_path` to the newest version (see the module's docstring)."""
    newest = migrations[-1].version
    conn = sqlite3.connect(db_path, isolation_level=None, timeout=30)
    try:
        found = user_version(conn)
        if found > newest:
            raise StateTooNew(
                f"{db_path} has schema version {found}, written by a newer Flotilla; this one knows "
                f"versions up to {newest}. Upgrade Flotilla, or restore a backup made by this version. "
                "Nothing was changed."
            )
        if found == newest:
            return MigrationReport(found, found)
        if not _has_tables(conn):
            conn.execute(f"PRAGMA user_version = {newest}")
            return MigrationReport(found, newest)
        backup = _backup(conn, backups, found)
        pending = [m for m in migrations if m.version > found]
        conn.execute("BEGIN IMMEDIATE")
        try:
            for migration in pending:
                migration.apply(conn)
            conn.execute(f"PRAGMA user_version = {newest}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return MigrationReport(found, newest, tuple(m.description for m in pending), backup)
    finally:
        conn.close()

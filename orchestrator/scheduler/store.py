"""The scheduler's persistent state: next-run times, rule last-done times, the workspace
snapshot taken at the last tick, failed items already offered for retry, and idle time.

Everything here survives an orchestrator restart; that is what makes missed-run policies and
"changed since the last tick" meaningful.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from orchestrator.lifecycle import ActualStates, DesiredStates
from orchestrator.state.db import Database

SCHEMA = """
CREATE TABLE IF NOT EXISTS heartbeat_state (
    agent TEXT PRIMARY KEY,
    cadence TEXT,
    next_run TEXT,
    last_tick TEXT,
    last_activity TEXT NOT NULL,
    runs_seq INTEGER NOT NULL DEFAULT 0,
    scanned_wall REAL,
    rules_digest TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS heartbeat_rules (
    agent TEXT NOT NULL,
    rule TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    last_done TEXT,
    PRIMARY KEY (agent, rule)
);
CREATE TABLE IF NOT EXISTS heartbeat_files (
    agent TEXT NOT NULL,
    path TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    PRIMARY KEY (agent, path)
);
CREATE TABLE IF NOT EXISTS heartbeat_retry_seen (
    agent TEXT NOT NULL,
    item_id TEXT NOT NULL,
    PRIMARY KEY (agent, item_id)
);
"""


def iso(at: datetime) -> str:
    return at.isoformat()


def parse_time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


@dataclass(frozen=True)
class FileStamp:
    mtime_ns: int
    size: int
    sha256: str


Snapshot = dict[str, FileStamp]


@dataclass(frozen=True)
class AgentState:
    agent: str
    cadence: str | None
    next_run: datetime | None
    last_tick: datetime | None
    last_activity: datetime
    asleep: bool
    runs_seq: int
    scanned_wall: float | None
    rules_digest: str


@dataclass(frozen=True)
class RuleMark:
    first_seen: datetime
    last_done: datetime | None


class SchedulerStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)
        self.desired = DesiredStates(db)
        """Each agent's desired state (asleep or awake), as the lifecycle keeps it."""
        self.actual = ActualStates(db)
        """Each agent's actual state as the engine last reported it, as the lifecycle records it."""

    # --- per-agent state -------------------------------------------------------------------

    def state(self, agent: str, now: datetime) -> AgentState:
        """The agent's row, created on first sight (its idle time counts from then)."""
        self._db.execute(
            "INSERT INTO heartbeat_state(agent, last_activity) VALUES (?, ?) ON CONFLICT(agent) DO NOTHING",
            (agent, iso(now)),
        )
        row = self._db.query_one("SELECT * FROM heartbeat_state WHERE agent = ?", (agent,))
        assert row is not None
        last_activity = datetime.fromisoformat(row["last_activity"])
        desired, since = self.desired.of(agent)
        woke = since if desired == "awake" else None
        return AgentState(
            agent=agent,
            cadence=row["cadence"],
            next_run=parse_time(row["next_run"]),
            last_tick=parse_time(row["last_tick"]),
            last_activity=max(last_activity, woke) if woke is not None else last_activity,
            asleep=desired == "asleep",
            runs_seq=int(row["runs_seq"]),
            scanned_wall=row["scanned_wall"],
            rules_digest=row["rules_digest"],
        )

    def set_next_run(self, agent: str, cadence: str | None, next_run: datetime | None) -> None:
        self._db.execute(
            "UPDATE heartbeat_state SET cadence = ?, next_run = ? WHERE agent = ?",
            (cadence, iso(next_run) if next_run else None, agent),
        )

    def next_runs(self) -> dict[str, datetime]:
        rows = self._db.query("SELECT agent, next_run FROM heartbeat_state WHERE next_run IS NOT NULL")
        return {row["agent"]: datetime.fromisoformat(row["next_run"]) for row in rows}

    def mark_tick(self, agent: str, at: datetime) -> None:
        self._db.execute("UPDATE heartbeat_state SET last_tick = ? WHERE agent = ?", (iso(at), agent))

    def set_rules_digest(self, agent: str, digest: str) -> None:
        self._db.execute("UPDATE heartbeat_state SET rules_digest = ? WHERE agent = ?", (digest, agent))

    def note_activity(self, agent: str, at: datetime) -> None:
        self._db.execute(
            "INSERT INTO heartbeat_state(agent, last_activity) VALUES (?, ?)"
            " ON CONFLICT(agent) DO UPDATE SET last_activity = MAX(last_activity, excluded.last_activity)",
            (agent, iso(at)),
        )

    # --- idle time: activity here, desired states in `orchestrator.lifecycle` -----------------

    def idle_since(self) -> dict[str, tuple[datetime, bool]]:
        """Every known agent's last activity (or its last wake, when later) and whether it
        sleeps, in two queries: what a pass of the sleep policy over the whole fleet reads."""
        rows = self._db.query("SELECT agent, last_activity FROM heartbeat_state")
        asleep, woke = self.desired.asleep(), self.desired.awake_since()
        found = {}
        for row in rows:
            agent = str(row["agent"])
            last = datetime.fromisoformat(row["last_activity"])
            found[agent] = (max(last, woke[agent]) if agent in woke else last, agent in asleep)
        return found

    # --- rules -----------------------------------------------------------------------------

    def rule_marks(self, agent: str, keys: list[str], at: datetime) -> dict[str, RuleMark]:
        """Last-done times of these rules; a rule seen for the first time is recorded as such."""
        if not keys:
            return {}
        with self._db.transaction() as conn:
            for key in keys:
                conn.execute(
                    "INSERT INTO heartbeat_rules(agent, rule, first_seen) VALUES (?, ?, ?)"
                    " ON CONFLICT(agent, rule) DO NOTHING",
                    (agent, key, iso(at)),
                )
        rows = self._db.query("SELECT * FROM heartbeat_rules WHERE agent = ?", (agent,))
        marks = {
            row["rule"]: RuleMark(datetime.fromisoformat(row["first_seen"]), parse_time(row["last_done"]))
            for row in rows
        }
        return {key: marks[key] for key in keys}

    def mark_rules_done(self, agent: str, keys: list[str], at: datetime) -> None:
        if not keys:
            return
        with self._db.transaction() as conn:
            conn.executemany(
                "UPDATE heartbeat_rules SET last_done = ? WHERE agent = ? AND rule = ?",
                [(iso(at), agent, key) for key in keys],
            )

    # --- workspace snapshot ----------------------------------------------------------------

    def snapshot(self, agent: str) -> Snapshot:
        rows = self._db.query("SELECT * FROM heartbeat_files WHERE agent = ?", (agent,))
        return {row["path"]: FileStamp(row["mtime_ns"], row["size"], row["sha256"]) for row in rows}

    def save_snapshot(self, agent: str, old: Snapshot, new: Snapshot, wall: float, runs_seq: int) -> None:
        """Store only the difference: most ticks change nothing."""
        gone = [path for path in old if path not in new]
        changed = [(path, stamp) for path, stamp in new.items() if old.get(path) != stamp]
        with self._db.transaction() as conn:
            conn.executemany(
                "DELETE FROM heartbeat_files WHERE agent = ? AND path = ?", [(agent, p) for p in gone]
            )
            conn.executemany(
                "INSERT INTO heartbeat_files(agent, path, mtime_ns, size, sha256) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(agent, path) DO UPDATE SET mtime_ns = excluded.mtime_ns,"
                " size = excluded.size, sha256 = excluded.sha256",
                [(agent, p, s.mtime_ns, s.size, s.sha256) for p, s in changed],
            )
            conn.execute(
                "UPDATE heartbeat_state SET scanned_wall = ?, runs_seq = MAX(runs_seq, ?) WHERE agent = ?",
                (wall, runs_seq, agent),
            )

    # --- retries ---------------------------------------------------------------------------

    def retry_seen(self, agent: str) -> set[str]:
        rows = self._db.query("SELECT item_id FROM heartbeat_retry_seen WHERE agent = ?", (agent,))
        return {row["item_id"] for row in rows}

    def mark_retry_seen(self, agent: str, item_ids: list[str]) -> None:
        if not item_ids:
            return
        with self._db.transaction() as conn:
            conn.executemany(
                "INSERT INTO heartbeat_retry_seen(agent, item_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(agent, item_id) for item_id in item_ids],
            )

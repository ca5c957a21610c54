"""What the hooks remember: deliveries already accepted (to refuse replays) and counts of every
outcome (for /metrics). Owns the tables `hook_deliveries` and `hook_counts`."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from orchestrator.state.db import Database, safe_query

SCHEMA = """
CREATE TABLE IF NOT EXISTS hook_deliveries (
    hook TEXT NOT NULL,
    key TEXT NOT NULL,
    item_id TEXT NOT NULL,
    seen_at TEXT NOT NULL,
    PRIMARY KEY (hook, key)
);
CREATE INDEX IF NOT EXISTS hook_deliveries_age ON hook_deliveries(seen_at);
CREATE TABLE IF NOT EXISTS hook_counts (
    hook TEXT NOT NULL,
    outcome TEXT NOT NULL,
    n INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hook, outcome)
);
"""


class HookStore:
    def __init__(self, db: Database) -> None:
        self._db = db
        db.ensure_schema(SCHEMA)

    def claim(
        self, hook: str, keys: tuple[str, ...], item_id: str, now: datetime, keep: timedelta
    ) -> str | None:
        """Remember these keys for this delivery, unless one was seen within `keep`: then the item
        id of the earlier delivery (a replay), and nothing is remembered."""
        cutoff = (now - keep).isoformat()
        with self._db.transaction() as conn:
            conn.execute("DELETE FROM hook_deliveries WHERE seen_at < ?", (cutoff,))
            for key in keys:
                row = conn.execute(
                    "SELECT item_id FROM hook_deliveries WHERE hook = ? AND key = ?", (hook, key)
                ).fetchone()
                if row is not None:
                    return str(row["item_id"])
            conn.executemany(
                "INSERT INTO hook_deliveries(hook, key, item_id, seen_at) VALUES (?, ?, ?, ?)",
                [(hook, key, item_id, now.isoformat()) for key in keys],
            )
        return None

    def release(self, hook: str, item_id: str) -> None:
        """Forget a delivery whose item could not be queued, so that its sender may try again."""
        self._db.execute("DELETE FROM hook_deliveries WHERE hook = ? AND item_id = ?", (hook, item_id))

    def count(self, hook: str, outcome: str) -> None:
        self._db.execute(
            "INSERT INTO hook_counts(hook, outcome, n) VALUES (?, ?, 1)"
            " ON CONFLICT(hook, outcome) DO UPDATE SET n = n + 1",
            (hook, outcome),
        )


def hook_counts(db: Database) -> Counter[tuple[str, str]]:
    """Requests to each hook by outcome, for /metrics (empty before any hook was called)."""
    rows = safe_query(db, "SELECT hook, outcome, n FROM hook_counts")
    return Counter({(row["hook"], row["outcome"]): int(row["n"]) for row in rows})

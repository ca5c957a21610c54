"""A forgotten fact leaves what the orchestrator keeps of the agent, when the operator forgets
it: the kept versions of the workspace files in the operator's copy (the live files are
rewritten by the agent, through the one write path), and the agent's rows in state.db that
state it (inbox items and their results, run records, events). Each sentence stating it becomes
"(forgotten)"; JSON stays JSON."""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Sequence

from agent_runtime import Workspace
from agent_runtime.memory import forget_in_versions, scrub_forgotten
from orchestrator.state.db import Database, columns_of

# The agent's rows that may quote what it was told or answered, and their text columns.
AGENT_TEXT_COLUMNS: dict[str, tuple[str, ...]] = {
    "inbox": ("text", "input", "result"),
    "runs": ("detail",),
    "events": ("data",),
}
_WORD = re.compile(r"\w+")


def forget_in_workspace_versions(workspace: Workspace, texts: Sequence[str]) -> int:
    """Rewrite every kept version that states one of the texts; how many versions changed."""
    return forget_in_versions(workspace, texts)


def _probe(text: str) -> str | None:
    """The fact's rarest-looking word (a number first, else the longest) for a LIKE filter."""
    found: list[str] = _WORD.findall(text)
    if not found:
        return None
    return max(found, key=lambda word: (any(c.isdigit() for c in word), len(word)))


def forget_in_state(db: Database, agent: str, texts: Sequence[str]) -> int:
    """Scrub the agent's rows in state.db that state one of the texts; how many rows changed.
    The WAL is then truncated when no reader holds it, so the old row images leave it too."""
    facts = [text for text in texts if text.strip()]
    probes = sorted({probe for probe in map(_probe, facts) if probe})
    changed = 0
    for table, wanted in AGENT_TEXT_COLUMNS.items():
        present = columns_of(db, table)
        columns = [column for column in wanted if column in present]
        if "agent" not in present or not columns:
            continue
        for probe in probes:
            changed += _scrub_table(db, table, columns, agent, probe, facts)
    if changed:
        # A busy WAL is truncated by a later checkpoint.
        with contextlib.suppress(sqlite3.Error):
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return changed


def _scrub_table(
    db: Database, table: str, columns: list[str], agent: str, probe: str, facts: Sequence[str]
) -> int:
    like = " OR ".join(f"{column} LIKE ?" for column in columns)
    rows = db.query(
        f"SELECT rowid AS row_id, {', '.join(columns)} FROM {table} WHERE agent = ? AND ({like})",
        [agent, *([f"%{probe}%"] * len(columns))],
    )
    changed = 0
    with db.transaction() as conn:
        for row in rows:
            updates = {
                column: scrub_forgotten(str(row[column]), facts)
                for column in columns
                if row[column] is not None and scrub_forgotten(str(row[column]), facts) != str(row[column])
            }
            if not updates:
                continue
            assignments = ", ".join(f"{column} = ?" for column in updates)
            conn.execute(
                f"UPDATE {table} SET {assignments} WHERE rowid = ?", [*updates.values(), row["row_id"]]
            )
            changed += 1
    return changed

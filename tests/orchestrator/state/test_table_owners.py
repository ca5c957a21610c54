"""One owner per table of state.db: SQL that names a table appears only in its owner's module.

Every other part asks the owner through a method. The SQL is read from the product's string
literals (`ast`), so a query moved elsewhere fails here, whoever moves it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# Each table of state.db and the module(s) whose SQL may name it.
TABLE_OWNERS: dict[str, frozenset[str]] = {
    # One row per agent, each concern of its lifecycle in its own columns and module.
    "agent_lifecycle": frozenset(
        {
            "orchestrator.lifecycle.table",
            "orchestrator.lifecycle.desired",
            "orchestrator.lifecycle.restarts",
            "orchestrator.lifecycle.actual",
        }
    ),
    "alerts": frozenset({"orchestrator.alerts.store"}),
    "approvals": frozenset({"orchestrator.approvals.store"}),
    "approval_uses": frozenset({"orchestrator.approvals.store"}),
    "alert_cursor": frozenset({"orchestrator.alerts.store"}),
    "broker_messages": frozenset({"orchestrator.broker.messages"}),
    "chat_pairing_codes": frozenset({"orchestrator.conversations.people"}),
    "chat_people": frozenset({"orchestrator.conversations.people"}),
    "events": frozenset({"orchestrator.events"}),
    "gateway_budget_alerts": frozenset({"orchestrator.gateway.budget"}),
    "gateway_settled_answers": frozenset({"orchestrator.gateway.settled_answers"}),
    "gateway_spend_daily": frozenset({"orchestrator.gateway.ledger"}),
    "gateway_usage": frozenset({"orchestrator.gateway.ledger"}),
    "heartbeat_files": frozenset({"orchestrator.scheduler.store"}),
    "hook_counts": frozenset({"orchestrator.hooks.store"}),
    "http_request_days": frozenset({"orchestrator.egress.budget"}),
    "hook_deliveries": frozenset({"orchestrator.hooks.store"}),
    "heartbeat_retry_seen": frozenset({"orchestrator.scheduler.store"}),
    "heartbeat_rules": frozenset({"orchestrator.scheduler.store"}),
    "heartbeat_state": frozenset({"orchestrator.scheduler.store"}),
    # The broker's message log joins the inbox it delivers into, to show what became of each
    # delivery: the broker owns both tables, in two modules.
    "memory_due": frozenset({"orchestrator.scheduler.memory_due"}),
    "inbox": frozenset(
        {
            "orchestrator.broker.dead_letters",
            "orchestrator.broker.items",
            "orchestrator.broker.messages",
            "orchestrator.broker.queue",
            "orchestrator.broker.upkeep",
            "orchestrator.broker.views",
        }
    ),
    "notifications": frozenset({"orchestrator.notifications.store"}),
    "principal_tokens": frozenset({"orchestrator.control.auth"}),
    "runs": frozenset({"orchestrator.scheduler.runs"}),
    "wake_boosts": frozenset({"orchestrator.lifecycle.raised_limits"}),
    "workflow_runs": frozenset({"orchestrator.workflows.store"}),
    "workflow_steps": frozenset({"orchestrator.workflows.store"}),
    "workflow_triggers": frozenset({"orchestrator.workflows.store"}),
}
# Schema migrations change tables of every owner, by design.
MIGRATIONS = "orchestrator.state.migrations"

NAMED_TABLE = re.compile(
    r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE|EXISTS)\s+([a-z_][a-z0-9_]*)|\bON\s+([a-z_][a-z0-9_]*)\s*\("
)
CREATED_TABLE = re.compile(r"\bCREATE\s+(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)")


def _strings_by_module() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for file in (ROOT / "orchestrator").rglob("*.py"):
        module = ".".join(file.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(file.read_text(), str(file))
        found[module] = [
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
    return found


STRINGS = _strings_by_module()


def tables_named(text: str) -> set[str]:
    return {first or second for first, second in NAMED_TABLE.findall(text)}


def test_the_sql_is_read_from_the_code() -> None:
    assert "inbox" in tables_named("SELECT id FROM inbox WHERE agent = ?")
    assert "runs" in tables_named("CREATE INDEX IF NOT EXISTS runs_agent ON runs(agent, seq)")
    assert any("inbox" in tables_named(text) for text in STRINGS["orchestrator.broker.queue"])


def test_every_table_has_an_owner() -> None:
    created = {name for texts in STRINGS.values() for text in texts for name in CREATED_TABLE.findall(text)}
    assert created, "no CREATE TABLE found: the scan is broken"
    assert created <= set(TABLE_OWNERS), f"tables without an owner: {sorted(created - set(TABLE_OWNERS))}"


def test_sql_names_a_table_only_in_its_owner() -> None:
    strays = sorted(
        f"{module} names {table}"
        for module, texts in STRINGS.items()
        if module != MIGRATIONS
        for text in texts
        for table in tables_named(text)
        if table in TABLE_OWNERS and module not in TABLE_OWNERS[table]
    )
    assert not strays, "SQL outside the table's owner (ask the owner through a method):\n" + "\n".join(strays)

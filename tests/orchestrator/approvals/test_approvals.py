"""The approval store: items made by agents, decided by the operator, denied by their timeout,
kept across an orchestrator restart (a new store on the same database)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent_runtime.protocol import ApprovalRequest
from orchestrator.approvals import AlreadyDecided, ApprovalStore, UnknownApproval
from orchestrator.config.tools import ToolsConfig
from orchestrator.events import EventBus
from orchestrator.state.db import Database


def request(key: str = "approval-key-1", timeout_s: float = 60.0) -> ApprovalRequest:
    return ApprovalRequest(
        key=key, tool="write_file", arguments={"path": "a.md"}, item_id="item-1", timeout_s=timeout_s
    )


@pytest.fixture
def db(tmp_path: Path) -> Database:
    return Database(tmp_path / "state.db")


def test_the_same_key_finds_the_same_item_and_one_event_is_published(db: Database) -> None:
    events = EventBus(db)
    store = ApprovalStore(db, events)
    first = store.request("alpha", request())
    again = store.request("alpha", request())
    assert first.id == again.id and first.state == "pending"
    other_agent = store.request("beta", request())
    assert other_agent.id != first.id
    requested = [e for e in events.recent(limit=50) if e.type == "approval.requested"]
    assert len(requested) == 2


def test_approve_and_deny_settle_once(db: Database) -> None:
    store = ApprovalStore(db, EventBus(db))
    item = store.request("alpha", request())
    approved = store.decide(item.id, "approved", "fine")
    assert approved.state == "approved" and approved.reason == "fine" and approved.decided_at
    with pytest.raises(AlreadyDecided, match="already approved"):
        store.decide(item.id, "denied")
    denied = store.decide(store.request("alpha", request("approval-key-2")).id, "denied", "no")
    assert denied.state == "denied"
    assert [i.state for i in store.list()] == ["denied", "approved"]
    assert store.list("pending") == []


def test_an_item_past_its_timeout_reads_as_expired_and_cannot_be_approved(db: Database) -> None:
    store = ApprovalStore(db, EventBus(db))
    item = store.request("alpha", request(timeout_s=0.2))
    time.sleep(0.3)
    assert store.get(item.id).state == "expired"
    with pytest.raises(AlreadyDecided, match="already expired"):
        store.decide(item.id, "approved")


def test_items_survive_a_restart_and_belong_to_their_agent(db: Database, tmp_path: Path) -> None:
    item = ApprovalStore(db, EventBus(db)).request("alpha", request())
    reopened = Database(tmp_path / "state.db")
    store = ApprovalStore(reopened, EventBus(reopened))
    assert store.get(item.id, "alpha").state == "pending"
    with pytest.raises(UnknownApproval):
        store.get(item.id, "beta")
    assert store.decide(item.id, "approved").state == "approved"


def test_rules_and_servers_name_what_needs_approval() -> None:
    tools = ToolsConfig.model_validate(
        {
            "mcp": [{"name": "git", "command": ["mcp-server-git"], "approval": "required"}],
            "rules": {
                "write_file": {"approval": "required"},
                "researcher.find_facts": {"approval": "required"},
            },
            "approval_timeout": "90s",
        }
    )
    assert tools.approval_required() == ["git__*", "researcher.find_facts", "write_file"]
    assert tools.approval_timeout_s == 90.0
    with pytest.raises(ValueError, match="given twice"):
        ToolsConfig.model_validate(
            {"mcp": [{"name": "a", "command": ["x"]}, {"name": "a", "command": ["y"]}]}
        )


def test_rules_must_name_a_declared_server_or_a_peer_of_the_agent() -> None:
    tools = ToolsConfig.model_validate(
        {
            "mcp": [{"name": "time", "command": ["mcp-server-time"]}],
            "rules": {
                "time__convert_time": {"approval": "required"},
                "git__git_commit": {"approval": "required"},
                "researcher.find_facts": {"approval": "required"},
                "stranger.op": {"approval": "required"},
                "write_file": {"approval": "required"},
            },
        }
    )
    problems = tools.rule_problems(["researcher"])
    assert len(problems) == 2
    assert "'git__git_commit' names no MCP server of this agent (declared: time)" in problems[0]
    assert "'stranger.op' names 'stranger', which is not in this agent's talks_to" in problems[1]

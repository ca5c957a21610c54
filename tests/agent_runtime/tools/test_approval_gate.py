"""Which calls wait for approval, and what the model is told when one is denied."""

from __future__ import annotations

from typing import Any

from agent_runtime.protocol import approval_key, needs_approval
from agent_runtime.tools.registry import Tool, ToolRegistry, Verdict

REQUIRED = ["git__*", "researcher.find_facts", "write_file"]


def test_needs_approval_matches_tools_servers_and_peer_operations() -> None:
    assert needs_approval(REQUIRED, "write_file", {}) == "write_file"
    assert needs_approval(REQUIRED, "git__git_commit", {}) == "git__git_commit"
    assert needs_approval(REQUIRED, "time__get_current_time", {}) is None
    ask = {"agent": "researcher", "operation": "find_facts", "input": {}}
    assert needs_approval(REQUIRED, "ask_agent", ask) == "researcher.find_facts"
    assert needs_approval(REQUIRED, "ask_agent", {**ask, "operation": "summarize"}) is None
    assert needs_approval(REQUIRED, "read_file", {"path": "x"}) is None


def test_the_key_is_stable_for_one_call_of_one_item() -> None:
    assert approval_key("i1", "write_file", {"a": 1, "b": 2}) == approval_key(
        "i1", "write_file", {"b": 2, "a": 1}
    )
    assert approval_key("i1", "write_file", {"a": 1}) != approval_key("i2", "write_file", {"a": 1})


def _registry(verdict: Verdict | None, ran: list[dict[str, Any]]) -> ToolRegistry:
    def handler(arguments: dict[str, Any]) -> str:
        ran.append(arguments)
        return "written"

    tool = Tool(
        "write_file", "Write.", {"type": "object", "properties": {"path": {"type": "string"}}}, handler
    )
    return ToolRegistry([tool], gate=lambda name, arguments: verdict)


def test_a_denied_call_does_not_run_and_says_why() -> None:
    ran: list[dict[str, Any]] = []
    outcome = _registry(Verdict("denied", "ap-1", "not today"), ran).dispatch("write_file", '{"path": "a"}')
    assert ran == [] and not outcome.ok
    assert outcome.output.startswith("DENIED: write_file was not run: the operator denied it (not today)")
    assert outcome.verdict is not None and outcome.verdict.approval_id == "ap-1"


def test_an_expired_call_does_not_run_and_an_approved_one_does() -> None:
    ran: list[dict[str, Any]] = []
    expired = _registry(Verdict("expired", "ap-2"), ran).dispatch("write_file", '{"path": "a"}')
    assert ran == [] and "no operator decided in time" in expired.output
    approved = _registry(Verdict("approved", "ap-3"), ran).dispatch("write_file", '{"path": "a"}')
    assert approved.ok and approved.output == "written" and ran == [{"path": "a"}]
    plain = _registry(None, ran).dispatch("write_file", '{"path": "b"}')
    assert plain.ok and plain.verdict is None

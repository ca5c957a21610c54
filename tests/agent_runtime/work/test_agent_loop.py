"""The tool-calling loop against a scripted model over real HTTP."""

from __future__ import annotations

import itertools
import json
from typing import Any

from agent_runtime.protocol import ItemKind, RunOutcome
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply, last_text


def history_records(data_dir: Any) -> list[dict[str, Any]]:
    records = []
    for path in sorted((data_dir / "history").glob("*.jsonl")):
        records += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    return records


def test_reply_is_streamed_logged_and_recorded(harness: HarnessFactory) -> None:
    h = harness(lambda body: Reply("Hello operator, all is well here."))
    result = h.send("How are you?")
    assert result.ok and result.text == "Hello operator, all is well here."
    item_id = next(iter(h.fake.results))
    assert "".join(h.fake.progress[item_id]) == result.text
    records = history_records(h.data_dir)
    assert [r["role"] for r in records] == ["user", "assistant"]
    assert all({"id", "at", "role", "content", "item_id"} <= r.keys() for r in records)
    assert records[0]["content"].endswith("How are you?")
    run = h.fake.runs[-1]
    assert run.outcome == RunOutcome.OK and run.trigger == "operator" and run.item_id == item_id
    assert run.tokens_in == 11 and run.tokens_out == 7
    daily = list((h.data_dir / "workspace" / "memory").glob("*.md"))
    assert len(daily) == 1 and "operator · ok: Hello operator" in daily[0].read_text(encoding="utf-8")


def test_tool_call_result_goes_back_to_the_model(harness: HarnessFactory) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(f"the folder holds: {last_text(body)}")
        return Reply.call("write_file", path="notes/a.md", content="alpha")

    h = harness(model)
    result = h.send("write a note")
    assert result.ok and "wrote 5 bytes to notes/a.md" in result.text
    assert (h.data_dir / "workspace" / "notes" / "a.md").read_text(encoding="utf-8") == "alpha"
    roles = [r["role"] for r in history_records(h.data_dir)]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert h.fake.runs[-1].files_changed == ["notes/a.md"]


def test_iteration_limit_forces_a_final_answer_without_tools(harness: HarnessFactory) -> None:
    counter = itertools.count()

    def model(body: dict[str, Any]) -> Reply:
        if "tools" not in body:
            return Reply("best answer I have")
        return Reply.call("list_files", path=f"dir{next(counter)}")

    h = harness(model, limits={"max_iterations": 4, "max_tool_rounds": 10, "max_repeated_tool_calls": 3})
    result = h.send("explore")
    assert len(h.fake.requests) == 4
    assert ["tools" in r for r in h.fake.requests] == [True, True, True, False]
    assert result.ok and result.text.startswith("best answer I have")
    assert "iteration limit reached (4 model calls)" in result.text
    assert h.fake.runs[-1].outcome == RunOutcome.LIMIT


def test_model_insisting_on_tools_at_the_last_call_is_stopped(harness: HarnessFactory) -> None:
    h = harness(
        lambda body: Reply.call("list_files", path=str(len(body["messages"]))),
        limits={"max_iterations": 3, "max_tool_rounds": 10, "max_repeated_tool_calls": 5},
    )
    result = h.send("loop forever")
    assert len(h.fake.requests) == 3
    assert "iteration limit reached" in result.text
    records = history_records(h.data_dir)
    # Every call got a result, so the history stays a valid conversation.
    calls = [c["id"] for r in records if r["role"] == "assistant" for c in r.get("tool_calls", [])]
    answered = [r["tool_call_id"] for r in records if r["role"] == "tool"]
    assert calls == answered
    assert records[-1]["content"].startswith("NOT RUN: iteration limit reached")


def test_tool_round_limit(harness: HarnessFactory) -> None:
    counter = itertools.count()

    def model(body: dict[str, Any]) -> Reply:
        if "tools" not in body:
            return Reply("stopping here")
        return Reply.call("list_files", path=f"d{next(counter)}")

    h = harness(model, limits={"max_iterations": 10, "max_tool_rounds": 2, "max_repeated_tool_calls": 3})
    result = h.send("explore a lot")
    tool_results = [r["content"] for r in history_records(h.data_dir) if r["role"] == "tool"]
    assert len(tool_results) == 3
    assert tool_results[2].startswith("NOT RUN: tool round limit reached (2 rounds")
    assert ["tools" in r for r in h.fake.requests] == [True, True, True, False]
    assert result.text.startswith("stopping here") and "tool round limit" in result.text
    assert h.fake.runs[-1].outcome == RunOutcome.LIMIT


def test_repeated_identical_calls_are_stopped(harness: HarnessFactory) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if "tools" not in body:
            return Reply("I could not read it")
        return Reply.call("read_file", path="missing.md")

    h = harness(model, limits={"max_iterations": 10, "max_tool_rounds": 8, "max_repeated_tool_calls": 3})
    result = h.send("read missing.md")
    tool_results = [r["content"] for r in history_records(h.data_dir) if r["role"] == "tool"]
    assert len(tool_results) == 3
    assert all(t.startswith("ERROR: read_file failed") for t in tool_results[:2])
    assert tool_results[2].startswith("STOPPED: repeated identical tool call: read_file was called 3 times")
    last_request_tools = [m for m in h.fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert last_request_tools[-1]["content"].startswith("STOPPED")
    assert "[stopped: repeated identical tool call: read_file" in result.text
    # Only the two executed calls failed and were learned from (deduplicated into one entry).
    errors = (h.data_dir / "workspace" / "learnings" / "errors.md").read_text(encoding="utf-8")
    assert errors.count("`read_file`") == 1 and "seen 2 times" in errors


def test_bad_arguments_are_explained_to_the_model(harness: HarnessFactory) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "tool":
            return Reply(last_text(body))
        return Reply.call("write_file", path="x.md")

    h = harness(model)
    result = h.send("write")
    assert "ERROR: invalid arguments for write_file: 'content' is a required property" in result.text
    assert not (h.data_dir / "workspace" / "x.md").exists()


def test_heartbeat_uses_the_heartbeat_model(harness: HarnessFactory) -> None:
    h = harness(lambda body: Reply("HEARTBEAT_OK"), heartbeat_model="cheap-model")
    (h.data_dir / "workspace" / "HEARTBEAT.md").write_text("- check the queue\n", encoding="utf-8")
    result = h.send("", kind=ItemKind.HEARTBEAT, sender="scheduler")
    assert result.ok
    assert h.fake.requests[-1]["model"] == "cheap-model"
    assert "check the queue" in h.fake.requests[-1]["messages"][-1]["content"]
    assert h.fake.runs[-1].outcome == RunOutcome.IDLE and h.fake.runs[-1].trigger == "heartbeat"
    h.send("hello")
    assert h.fake.requests[-1]["model"] == "fake-model"


def test_model_failure_is_reported_not_raised(harness: HarnessFactory) -> None:
    h = harness(lambda body: Reply(status=429))
    result = h.send("hello")
    assert not result.ok
    assert result.error is not None and "scripted failure 429" in result.error
    assert h.fake.runs[-1].outcome == RunOutcome.ERROR


def test_peer_ask_output_follows_the_operation_contract(harness: HarnessFactory) -> None:
    interface = (
        "---\noperations:\n  - name: summarize\n    input: {type: object}\n"
        "    output:\n      type: object\n      properties: {summary: {type: string}}\n      required: [summary]\n"
        "---\nI summarize.\n"
    )
    h = harness(lambda body: Reply('Here you go: {"summary": "short"}'), seeds={"INTERFACE.md": interface})
    result = h.send("", kind=ItemKind.PEER_ASK, sender="beta", operation="summarize", input={"text": "long"})
    assert result.ok and result.output == {"summary": "short"}
    request = h.fake.requests[-1]["messages"][-1]["content"]
    assert "request from agent beta · operation summarize" in request
    assert '"required": ["summary"]' in request  # the output schema is shown to the model
    # A plain-text answer is left to the broker, which reads it as {"text": ...} and checks it.
    plain = harness(lambda body: Reply("no json here"), seeds={"INTERFACE.md": interface}).send(
        "", kind=ItemKind.PEER_ASK, sender="beta", operation="summarize", input={}
    )
    assert plain.ok and plain.output is None and plain.text == "no json here"


def test_peer_output_choice() -> None:
    from agent_runtime.work.worker import peer_output

    needs_summary = {"type": "object", "required": ["summary"]}
    free_text = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    assert peer_output('x {"summary": "s"} y', needs_summary) == {"summary": "s"}
    assert peer_output('echo of the input {"text": 1}', free_text) is None
    assert peer_output('{"other": 1}', needs_summary) == {"other": 1}
    assert peer_output("nothing", None) is None


def test_redelivered_item_is_not_worked_twice(harness: HarnessFactory) -> None:
    from datetime import UTC, datetime

    from agent_runtime.protocol import InboxItem

    h = harness(lambda body: Reply("once"))
    item = InboxItem(
        id="item-fixed",
        kind=ItemKind.OPERATOR_MESSAGE,
        created_at=datetime.now(UTC),
        sender="operator",
        text="hi",
    )
    h.worker.process(item)
    h.fake.results.clear()
    h.worker.process(item)
    assert len(h.fake.requests) == 1
    assert h.fake.results["item-fixed"].text == "once"


def test_record_correction_tool_feeds_every_later_prompt(harness: HarnessFactory) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if "units" in last_text(body) and body["messages"][-1]["role"] == "user":
            return Reply.call("record_correction", correction="Report distances in kilometres, not miles")
        return Reply("noted")

    h = harness(model)
    h.send("wrong units! use kilometres")
    h.send("another question")
    system = "\n".join(m["content"] for m in h.fake.requests[-1]["messages"] if m["role"] == "system")
    assert "Report distances in kilometres, not miles" in system


def test_identical_calls_compare_equal_whatever_their_json_layout() -> None:
    from agent_runtime.work.loop import call_key

    assert call_key("f", '{"a": 1, "b": [1, 2]}') == call_key("f", '{"b":[1,2],"a":1}')
    assert call_key("f", '{"a": 1}') != call_key("g", '{"a": 1}')
    assert call_key("f", "not json") == call_key("f", " not json ")


def test_memory_maintenance_is_started_after_items(harness: HarnessFactory) -> None:
    h = harness(lambda body: Reply("[]"), maintenance=True)
    for number in range(20):
        h.send(f"message {number}")
    started = [e for e in h.fake.events if e.type == "maintenance.run"]
    assert started and "extraction" in started[0].data["jobs"]
    runner = h.worker.memory.maintenance
    for job in started[0].data["jobs"]:
        assert runner.wait(job, timeout_s=30)


def test_expired_item_is_not_worked(harness: HarnessFactory) -> None:
    from datetime import UTC, datetime, timedelta

    h = harness(lambda body: Reply("should not be called"))
    result = h.send("too late", deadline=datetime.now(UTC) - timedelta(seconds=1))
    assert not result.ok and result.error is not None and "expired" in result.error
    assert h.fake.requests == []

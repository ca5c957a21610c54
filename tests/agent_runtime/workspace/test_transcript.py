"""The agent's turn log as served to the operator: the last turns, what follows an id, cut texts."""

from __future__ import annotations

from pathlib import Path

from agent_runtime.process.settings import Settings
from agent_runtime.protocol import AgentOp, AgentRequest, TranscriptQuery
from agent_runtime.transport.serving import AgentService
from agent_runtime.workspace.history import HistoryLog, Turn
from agent_runtime.workspace.transcript import MAX_TEXT, read_transcript

CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "memory_save", "arguments": '{"text": "tides"}'},
}


def log_two_turns(data: Path) -> HistoryLog:
    log = HistoryLog(data)
    log.append(Turn(role="user", content="first question", item_id="item-a"))
    log.append(Turn(role="assistant", content="first answer", item_id="item-a"))
    log.append(Turn(role="user", content="save tides", item_id="item-b"))
    log.append(Turn(role="assistant", content="", tool_calls=(CALL,), item_id="item-b"))
    log.append(
        Turn(role="tool", content="saved fact 3", tool_call_id="call_1", name="memory_save", item_id="item-b")
    )
    log.append(Turn(role="assistant", content="Saved.", item_id="item-b"))
    return log


def test_the_last_turns_with_tool_calls_and_results(tmp_path: Path) -> None:
    log = log_two_turns(tmp_path)
    page = read_transcript(log, TranscriptQuery(turns=1))
    assert page.earlier is True
    assert [m.item_id for m in page.messages] == ["item-b"] * 4
    call = page.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_1", "memory_save", '{"text": "tides"}')
    result = page.messages[2]
    assert (result.role, result.name, result.tool_call_id, result.content) == (
        "tool",
        "memory_save",
        "call_1",
        "saved fact 3",
    )
    everything = read_transcript(log, TranscriptQuery(turns=5))
    assert everything.earlier is False
    assert [m.content for m in everything.messages][:2] == ["first question", "first answer"]
    assert everything.last_id == everything.messages[-1].id


def test_what_follows_an_id(tmp_path: Path) -> None:
    log = log_two_turns(tmp_path)
    first = read_transcript(log, TranscriptQuery(turns=5))
    assert read_transcript(log, TranscriptQuery(after=first.last_id)).messages == []
    newer = log.append(Turn(role="user", content="third", item_id="item-c"))
    following = read_transcript(log, TranscriptQuery(after=first.last_id))
    assert [m.id for m in following.messages] == [newer.id]
    assert following.last_id == newer.id


def test_long_texts_are_cut_and_say_so_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    log = HistoryLog(tmp_path)
    long = log.append(Turn(role="tool", content="x" * (MAX_TEXT + 10), name="shell", item_id="i"))
    with log.path_for(long.at).open("a") as torn:
        torn.write('{"id": "t1", "at": ')
    (message,) = read_transcript(log, TranscriptQuery()).messages
    assert message.truncated and len(message.content) == MAX_TEXT


def test_served_over_the_channel_and_bad_queries_refused(tmp_path: Path) -> None:
    log_two_turns(tmp_path)
    settings = Settings(orchestrator_url="http://127.0.0.1:9", agent="alpha", data_dir=tmp_path)
    service = AgentService(settings, lambda: None, lambda: "")
    status, body = service.answer(AgentRequest(request=1, op=AgentOp.HISTORY_READ, body={"turns": 1}))
    assert status == 200 and len(body["messages"]) == 4
    status, body = service.answer(AgentRequest(request=2, op=AgentOp.HISTORY_READ, body={"turns": 0}))
    assert status == 422 and body["error"] == "invalid_request"


def test_the_messages_of_one_item(tmp_path: Path) -> None:
    log = log_two_turns(tmp_path)
    page = read_transcript(log, TranscriptQuery(item_id="item-b"))
    assert [m.role for m in page.messages] == ["user", "assistant", "tool", "assistant"]
    assert read_transcript(log, TranscriptQuery(item_id="item-z")).messages == []

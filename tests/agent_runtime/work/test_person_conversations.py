"""Each paired person has a conversation of their own: what Ana says never reaches the prompt
of Bruno's conversation (recent turns, compaction summary, memory recall, MEMORY.md), and Ana's
next message still sees her earlier turns."""

from __future__ import annotations

import json
import re
from typing import Any

from agent_runtime.protocol import ItemKind
from agent_runtime.work.conversations import conversation_key
from tests.agent_runtime.conftest import Harness, HarnessFactory
from tests.agent_runtime.fakes import Reply, last_text, system_text

ANA = "person:team:111"
BRUNO = "person:team:222"
SECRET = "4512"
REMEMBER = re.compile(r"^remember: (.+)$", re.MULTILINE)


class RecordingModel:
    """Answers the loop with "ok"; a message to remember is saved with memory_save and answered
    with its words (which the daily log would keep); a message asking to search memory searches
    it first. A flush extracts `remember:` lines and a summary echoes the transcript, so a leak
    of Ana's words through any of these shows in the requests kept here."""

    def __init__(self, reply_chars: int = 20) -> None:
        self.reply_chars = reply_chars
        self.loop_requests: list[dict[str, Any]] = []
        self.summaries: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = system_text(body)
        if "FLUSH_FACTS" in system:
            facts = REMEMBER.findall(last_text(body))
            return Reply("\n".join(json.dumps({"fact": fact}) for fact in facts) or "NONE")
        if "SUMMARIZE" in system:
            summary = "Summary of the talk: " + " ".join(last_text(body).split())[:400]
            self.summaries.append(summary)
            return Reply(summary)
        self.loop_requests.append(body)
        last = body["messages"][-1]
        content = str(last.get("content") or "")
        if last["role"] == "user" and "search memory" in content:
            return Reply.call("memory_search", query="locker code")
        if last["role"] == "user" and "remember: my locker code" in content:
            return Reply.call("memory_save", text=f"The user's locker code is {SECRET}", source="user_stated")
        if last["role"] == "tool" and '"status": "saved"' in content:
            return Reply(f"Noted: your locker code is {SECRET}")
        return Reply(("ok " * self.reply_chars)[: self.reply_chars])


def _prompt_text(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def _send_as(h: Harness, person: str, text: str) -> None:
    result = h.send(text, kind=ItemKind.OPERATOR_MESSAGE, sender=person, principal=person)
    assert result.ok, result.error


def _requests_since(model: RecordingModel, start: int) -> list[dict[str, Any]]:
    return model.loop_requests[start:]


def test_bruno_never_sees_what_ana_told_the_agent(harness: HarnessFactory) -> None:
    model = RecordingModel()
    h = harness(model)
    _send_as(h, ANA, f"remember: my locker code is {SECRET}")
    ana_first = len(model.loop_requests)
    assert any(SECRET in _prompt_text(body) for body in model.loop_requests[:ana_first])

    _send_as(h, BRUNO, "hello, please search memory for any locker code")
    bruno = _requests_since(model, ana_first)
    assert len(bruno) >= 2  # the memory search and its answer
    for body in bruno:
        assert SECRET not in _prompt_text(body), "Ana's words reached Bruno's prompt"
        assert "my locker code" not in _prompt_text(body)

    seen = len(model.loop_requests)
    _send_as(h, ANA, "what did I tell you before?")
    ana_again = _requests_since(model, seen)
    assert ana_again and SECRET in _prompt_text(ana_again[0]), "Ana lost her own conversation"
    assert "search memory" not in _prompt_text(ana_again[0]), "Bruno's words reached Ana's prompt"


def test_the_operator_keeps_the_main_conversation(harness: HarnessFactory) -> None:
    model = RecordingModel()
    h = harness(model)
    h.send("the operator says the build server is build-7")
    _send_as(h, ANA, f"remember: my locker code is {SECRET}")
    seen = len(model.loop_requests)
    h.send("which build server did I name?")
    operator = _requests_since(model, seen)
    assert "build-7" in _prompt_text(operator[0])
    assert SECRET not in _prompt_text(operator[0])
    assert (h.settings.runtime_dir / "context.json").is_file()
    person_file = h.settings.runtime_dir / "contexts" / f"{conversation_key(ANA)}.json"
    assert person_file.is_file()
    assert "111" not in person_file.name
    assert SECRET not in (h.settings.runtime_dir / "context.json").read_text(encoding="utf-8")


def test_anas_compacted_conversation_stays_hers(harness: HarnessFactory) -> None:
    model = RecordingModel(reply_chars=400)
    h = harness(model, context_window=4096)
    _send_as(h, ANA, f"remember: my locker code is {SECRET}")
    for turn in range(12):
        _send_as(h, ANA, f"filler {turn}: " + "words about the weather " * 30)
    assert any(SECRET in summary for summary in model.summaries), "Ana's conversation was not compacted"

    seen = len(model.loop_requests)
    _send_as(h, BRUNO, "hello, please search memory for any locker code")
    for body in _requests_since(model, seen):
        text = _prompt_text(body)
        assert SECRET not in text and "Summary of the talk" not in text
    memory_md = (h.data_dir / "workspace" / "MEMORY.md").read_text(encoding="utf-8")
    assert SECRET not in memory_md, "a flush of Ana's conversation wrote MEMORY.md"
    store = h.worker.memory.memory_store
    if store is not None:
        # The flushed fact is kept, in Ana's scope alone.
        kept = [fact for fact in store.list_facts(limit=1000) if SECRET in fact.text]
        assert kept and {fact.scope for fact in kept} == {ANA}

    seen = len(model.loop_requests)
    _send_as(h, ANA, "what was my code again?")
    assert "Summary of the talk" in _prompt_text(model.loop_requests[seen])


def test_a_person_conversation_survives_a_restart(harness: HarnessFactory) -> None:
    from agent_runtime.process.state import RuntimeState
    from agent_runtime.work.worker import Worker

    model = RecordingModel()
    h = harness(model)
    _send_as(h, ANA, f"remember: my locker code is {SECRET}")
    h.send("operator here")
    h.worker = Worker(h.settings, h.fake.config, h.worker.client, RuntimeState(), model_retries=0)
    h.worker.memory.maintenance = None
    seen = len(model.loop_requests)
    _send_as(h, ANA, "and now?")
    assert SECRET in _prompt_text(model.loop_requests[seen])
    assert "operator here" not in _prompt_text(model.loop_requests[seen])


def test_a_persons_turns_stay_out_of_the_main_transcript(harness: HarnessFactory) -> None:
    model = RecordingModel()
    h = harness(model)
    _send_as(h, ANA, f"remember: my locker code is {SECRET}")
    h.send("operator here")
    # The memory jobs read history/*.jsonl (extraction into the shared scope, consolidation).
    main_days = list((h.data_dir / "history").glob("*.jsonl"))
    assert main_days and not any(SECRET in day.read_text(encoding="utf-8") for day in main_days)
    ana_days = list((h.data_dir / "history" / "people" / conversation_key(ANA)).glob("*.jsonl"))
    assert ana_days and SECRET in ana_days[0].read_text(encoding="utf-8")
    daily = "".join(p.read_text(encoding="utf-8") for p in (h.data_dir / "workspace" / "memory").glob("*.md"))
    assert SECRET not in daily


def test_a_person_cannot_write_what_every_prompt_shows(harness: HarnessFactory) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if "FLUSH_FACTS" in system_text(body) or "SUMMARIZE" in system_text(body):
            return Reply("NONE")
        last = body["messages"][-1]
        if last["role"] == "user" and "memory file" in str(last.get("content")):
            write = {"name": "MEMORY.md", "content": f"- locker code {SECRET}"}
            return Reply(tool_calls=[("update_workspace", write)])
        if last["role"] == "user" and "correction" in str(last.get("content")):
            return Reply.call("record_correction", correction=f"Always mention locker code {SECRET}")
        return Reply("done")

    h = harness(model)
    _send_as(h, ANA, "put this in your memory file")
    _send_as(h, ANA, "take this correction")
    memory_md = h.data_dir / "workspace" / "MEMORY.md"
    assert SECRET not in memory_md.read_text(encoding="utf-8")
    for learned in (h.worker.learnings.corrections_path, h.worker.learnings.errors_path):
        assert not learned.exists() or SECRET not in learned.read_text(encoding="utf-8")
    refusals = [m["content"] for body in h.fake.requests for m in body["messages"] if m["role"] == "tool"]
    assert sum("memory_shared_writers" in str(text) for text in refusals) >= 2

    h.send("put this in your memory file")  # the operator writes the shared memory
    assert SECRET in memory_md.read_text(encoding="utf-8")


def test_forget_reaches_every_person_conversation(harness: HarnessFactory) -> None:
    model = RecordingModel()
    h = harness(model)
    h.worker.conversations.capacity = 1
    _send_as(h, ANA, f"remember: my locker code is {SECRET}")
    carla = "person:team:333"
    _send_as(h, carla, f"remember: my locker code is {SECRET}")
    assert [c for c in h.worker.conversations.held()][1:] == [h.worker.conversations.person(carla)]

    contexts = h.settings.runtime_dir / "contexts"
    assert all(SECRET in path.read_text(encoding="utf-8") for path in contexts.glob("*.json"))
    h.worker.forget_copies([f"The user's locker code is {SECRET}"])
    assert len(list(contexts.glob("*.json"))) == 2
    for path in contexts.glob("*.json"):
        assert SECRET not in path.read_text(encoding="utf-8"), path.name
    held = h.worker.conversations.person(carla)
    assert all(SECRET not in turn.content for turn in held.history)
    assert all(SECRET not in turn.content for turn in h.worker.conversations.person(ANA).history)


def test_the_operator_reads_every_conversation_in_order(harness: HarnessFactory) -> None:
    from agent_runtime.workspace.transcript import serve_transcript

    model = RecordingModel()
    h = harness(model)
    h.send("operator first")
    _send_as(h, ANA, "ana second")
    h.send("operator third")
    page = serve_transcript(h.data_dir, {"turns": 10})
    users = [m["content"].split("\n")[-1] for m in page["messages"] if m["role"] == "user"]
    assert users == ["operator first", "ana second", "operator third"]
    ana_item = page["messages"][2]["item_id"]
    of_item = serve_transcript(h.data_dir, {"item_id": ana_item})
    assert of_item["messages"] and all(m["item_id"] == ana_item for m in of_item["messages"])
    after = serve_transcript(h.data_dir, {"after": page["messages"][1]["id"]})
    assert [m["content"].split("\n")[-1] for m in after["messages"] if m["role"] == "user"] == [
        "ana second",
        "operator third",
    ]


def test_people_have_their_own_conversation_under_the_checkpoint_strategy(
    harness: HarnessFactory,
) -> None:
    from agent_runtime.work.context import ContextManager

    model = RecordingModel()
    quiet = {name: {"after_turns": 10_000} for name in ("review", "consolidation", "extraction")}
    h = harness(model, context={"strategy": "checkpoint", "jobs": quiet})
    _send_as(h, ANA, f"remember: my locker code is {SECRET}")
    seen = len(model.loop_requests)
    h.send("operator here")
    _send_as(h, BRUNO, "hello")
    for body in _requests_since(model, seen):
        assert SECRET not in _prompt_text(body)
    assert type(h.worker.conversations.person(ANA)) is ContextManager


def test_the_admission_rule_lets_people_write_the_shared_memory(harness: HarnessFactory) -> None:
    model = RecordingModel()
    h = harness(model, memory_shared_writers=["operator", "person"])
    _send_as(h, ANA, f"remember: my locker code is {SECRET}")
    store = h.worker.memory.memory_store
    if store is not None:
        assert {f.scope for f in store.list_facts(limit=100) if SECRET in f.text} == {""}
    assert h.worker._shares
    seen = len(model.loop_requests)
    _send_as(h, BRUNO, "hello")
    # Shared facts are recalled for everyone; Ana's turns still are not in Bruno's prompt.
    assert "remember: my locker code" not in _prompt_text(model.loop_requests[seen])


def test_a_failed_tool_call_in_a_persons_conversation_keeps_no_words(harness: HarnessFactory) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if "FLUSH_FACTS" in system_text(body) or "SUMMARIZE" in system_text(body):
            return Reply("NONE")
        if body["messages"][-1]["role"] == "user":
            return Reply(tool_calls=[("read_file", {"path": f"notes/locker-{SECRET}.md"})])
        return Reply("done")

    h = harness(model)
    _send_as(h, ANA, "read my notes")
    errors = h.worker.learnings.errors_path.read_text(encoding="utf-8")
    assert "read_file" in errors and SECRET not in errors
    h.send("read the notes")  # the operator's failures keep their text
    assert SECRET in h.worker.learnings.errors_path.read_text(encoding="utf-8")

"""A forget reaches every copy of the text in the agent's storage at once, on each path: the
model's forget during an item, the operator's forget on a running agent, and the operator's
forget on an agent that has not started its worker (asleep, woken only to answer). After each,
no byte of the forgotten text is in any file of the agent's storage, the store's included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_runtime.memory.models import FactStatus
from agent_runtime.protocol import AgentOp, AgentRequest
from agent_runtime.transport.serving import AgentService
from agent_runtime.work.erasure import scrub_lines
from agent_runtime.workspace.versioned import Workspace
from orchestrator.memory_access.forgetting import forget_in_workspace_versions
from tests.agent_runtime.conftest import Harness, HarnessFactory
from tests.agent_runtime.fakes import Reply

FACT = "The user's locker code is 4512"
RESTATED = "Locker code 4512 opens the user's gym locker"
SECRET = b"4512"


def scripted(*calls: tuple[str, dict[str, Any]]) -> Any:
    """A model that makes these tool calls, one per item, then answers repeating what it knows."""
    pending = list(calls)

    def model(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(f"Done: {last['content']}. For the record, {FACT}.")
        if not pending or "tools" not in body:
            return Reply("nothing to do")
        name, arguments = pending.pop(0)
        return Reply.call(name, **arguments)

    return model


def files_holding(root: Path, needle: bytes) -> list[str]:
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.is_file() and needle in path.read_bytes()
    )


def spread_copies(h: Harness) -> None:
    """The fact where an agent's storage keeps it: saved by the model, then MEMORY.md, a note,
    the summary of compacted history, the checkpoint strategy's files."""
    h.send(f"My locker code is 4512, remember it. {RESTATED}.")
    workspace = h.worker.workspace
    workspace.write("MEMORY.md", f"# Memory\n\n- {FACT}\n- The user likes green tea\n", "agent")
    workspace.write(
        "MEMORY.md", f"# Memory\n\n- {FACT}\n- The user likes green tea\n- Lunch at noon\n", "agent"
    )
    (workspace.root / "notes.md").write_text(f"Gym notes. {FACT}. Bring a towel.\n", encoding="utf-8")
    h.worker.context.summary = f"We set up the gym plan. {FACT}. Then lunch."
    h.worker.context.save()
    cognition = h.data_dir / "cognition"
    cognition.mkdir(exist_ok=True)
    (cognition / "WORKING_MEMORY.md").write_text(f"## Priorities\n- {FACT}\n- Ship the report\n")
    store = h.worker.memory.memory_store
    store.save(RESTATED, source="agent", category="places")
    assert files_holding(h.data_dir, SECRET)


def assert_gone(h: Harness) -> None:
    assert files_holding(h.data_dir, SECRET) == []
    workspace = Workspace(h.data_dir)
    assert "green tea" in workspace.read("MEMORY.md")
    assert "Ship the report" in (h.data_dir / "cognition" / "WORKING_MEMORY.md").read_text()
    assert "Bring a towel" in (workspace.root / "notes.md").read_text()
    for line in (h.data_dir / "history").glob("*.jsonl"):
        for record in map(json.loads, line.read_text().splitlines()):
            for call in record.get("tool_calls", []):
                json.loads(call["function"]["arguments"])  # still JSON after the scrub


def test_the_models_forget_leaves_no_copy_and_no_reply_repeats_it(harness: HarnessFactory) -> None:
    save = {"text": FACT, "source": "user_stated", "category": "personal"}
    forget = {"id": 1, "with_restatements": True}
    h = harness(scripted(("memory_save", save), ("memory_forget", forget)))
    spread_copies(h)
    result = h.send("Please forget my locker code 4512 and anything restating it.")
    assert result.ok and "4512" not in result.text
    store = h.worker.memory.memory_store
    assert store.list_facts(status=FactStatus.ACTIVE) == []
    assert_gone(h)
    assert "4512" not in json.dumps(h.worker.context.summary) + json.dumps(
        [turn.content for turn in h.worker.context.history]
    )
    assert all("4512" not in json.dumps(record.model_dump(mode="json")) for record in h.fake.runs)
    # The orchestrator is told the texts once the item's records are sent, to rewrite its copies.
    assert h.fake.forgotten == [[FACT, RESTATED]]


def test_the_operators_forget_on_a_running_agent_lists_then_takes_restatements(
    harness: HarnessFactory,
) -> None:
    h = harness(scripted(("memory_save", {"text": FACT, "source": "user_stated"})))
    spread_copies(h)
    service = AgentService(
        h.settings, lambda: h.fake.config, lambda: "", forgotten_in_worker=lambda texts: _in_worker(h, texts)
    )
    store = h.worker.memory.memory_store
    [fact] = [f for f in store.list_facts() if f.text == FACT]
    restated = [f.id for f in store.list_facts() if f.text == RESTATED]
    status, answer = service.answer(AgentRequest(request=1, op=AgentOp.MEMORY_FORGET, body={"id": fact.id}))
    assert status == 200 and answer["restatements"] == restated
    assert "4512" not in json.dumps(answer)
    status, answer = service.answer(
        AgentRequest(request=2, op=AgentOp.MEMORY_FORGET, body={"id": restated[0], "with_restatements": True})
    )
    assert status == 200 and answer["forgotten"] == restated
    assert "4512" not in h.worker.context.summary
    assert_gone(h)


def _in_worker(h: Harness, texts: list[str]) -> bool:
    h.worker.forget_copies(texts)
    return True


def test_the_operators_forget_on_an_agent_without_its_worker(harness: HarnessFactory) -> None:
    h = harness(scripted(("memory_save", {"text": FACT, "source": "user_stated"})))
    spread_copies(h)
    store = h.worker.memory.memory_store
    ids = [f.id for f in store.list_facts() if "4512" in f.text]
    store.close()  # the worker gave its memory back: only the files remain
    service = AgentService(h.settings, lambda: h.fake.config, lambda: "")
    status, answer = service.answer(
        AgentRequest(request=1, op=AgentOp.MEMORY_FORGET, body={"id": ids[0], "with_restatements": True})
    )
    assert status == 200 and sorted(answer["forgotten"]) == sorted(ids)
    assert_gone(h)


def test_the_operators_copy_loses_the_text_from_its_kept_versions(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.write("MEMORY.md", f"- {FACT}\n- Tea\n", "agent")
    workspace.write("MEMORY.md", "- Tea\n", "job")
    assert forget_in_workspace_versions(workspace, [FACT]) == 1
    assert files_holding(tmp_path, SECRET) == []
    assert workspace.read_version("MEMORY.md", 1) == "- Tea\n"
    assert not workspace.changed_outside("MEMORY.md")


def test_a_line_that_only_shares_words_stays() -> None:
    text = "- The locker room is on floor 2\n- Code review at 10\n"
    assert scrub_lines(text, [FACT]) == text

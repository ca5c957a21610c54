"""The `checkpoint` context strategy through the real worker and loop, against a model served
over HTTP: replay after the consolidation checkpoint, working memory in the prompt, the whole
transcript on disk, a bounded replay, and a stable prefix."""

from __future__ import annotations

import json
from typing import Any

from agent_runtime.cognition.context import CheckpointContext
from agent_runtime.protocol import ItemKind
from agent_runtime.work.context import ContextManager
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply

QUIET_JOBS = {name: {"after_turns": 10_000} for name in ("review", "consolidation", "extraction")}


class Recorder:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.job_prompts: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        if body["messages"][0]["role"] == "system":  # not a memory job's own prompt
            self.bodies.append(body)
        else:
            self.job_prompts.append(str(body["messages"][0]["content"]))
        return Reply(f"noted ({len(self.bodies)})")

    def user_texts(self, index: int = -1) -> list[str]:
        return [str(m["content"]) for m in self.bodies[index]["messages"] if m["role"] == "user"]

    def memory_block(self, index: int = -1) -> str:
        return str(self.bodies[index]["messages"][1]["content"])


def _transcript(data_dir: Any) -> list[str]:
    lines = []
    for path in sorted((data_dir / "history").glob("*.jsonl")):
        lines += [json.loads(line)["content"] for line in path.read_text().splitlines()]
    return lines


def test_compact_stays_the_default(harness: HarnessFactory) -> None:
    h = harness(Recorder())
    assert type(h.worker.context) is ContextManager
    assert h.worker.cognition is None


def test_replay_starts_after_the_consolidation_checkpoint(harness: HarnessFactory) -> None:
    model = Recorder()
    h = harness(model, context={"strategy": "checkpoint", "adopt_after_turns": 2, "jobs": QUIET_JOBS})
    assert isinstance(h.worker.context, CheckpointContext)
    h.send("Draft the Q3 report, deadline friday")
    h.send("Also look into the flaky CI job")
    assert len(model.user_texts()) == 2
    assert "## WORKING_MEMORY.md\n(empty)" in model.memory_block()
    assert "cognition/facts.md" in model.memory_block()
    runner = h.worker.cognition
    assert runner is not None
    record = runner.run("consolidation")
    assert record.input_turns == 4
    # The job asked the agent's model (its answer was unusable, so the deterministic pass stands).
    assert record.model == "fake-model" and "CONSOLIDATE_WORKING_MEMORY" in model.job_prompts[-1]
    h.send("What is on my plate?")
    # Only the new message is replayed; the earlier turns are in working memory instead.
    users = model.user_texts()
    assert len(users) == 1 and "What is on my plate?" in users[0]
    block = model.memory_block()
    assert "Draft the Q3 report, deadline friday" in block and "flaky CI job" in block
    # The transcript stays whole on disk.
    assert sum("Draft the Q3 report" in text for text in _transcript(h.data_dir)) == 1
    assert len(_transcript(h.data_dir)) == 6


def test_the_replay_moves_only_once_the_checkpoint_covers_enough_turns(harness: HarnessFactory) -> None:
    model = Recorder()
    h = harness(model, context={"strategy": "checkpoint", "adopt_after_turns": 3, "jobs": QUIET_JOBS})
    runner = h.worker.cognition
    assert runner is not None
    h.send("first")
    h.send("second")
    runner.run("consolidation")  # covers 2 exchanges: fewer than 3, the prompt keeps its prefix
    h.send("third")
    assert model.bodies[-1]["messages"][: len(model.bodies[-2]["messages"])] == model.bodies[-2]["messages"]
    runner.run("consolidation")  # now covers 3
    h.send("fourth")
    users = model.user_texts()
    assert len(users) == 1 and "fourth" in users[0]
    assert "- third" in model.memory_block()


def test_a_long_replay_is_cut_in_one_step_and_the_prefix_holds_between_cuts(harness: HarnessFactory) -> None:
    model = Recorder()
    h = harness(model, context={"strategy": "checkpoint", "replay_turns": 8, "jobs": QUIET_JOBS})
    for n in range(8):
        h.send(f"message number {n}")
    counts = [
        len([m for m in body["messages"] if m["role"] in ("user", "assistant")]) for body in model.bodies
    ]
    # 1, 3, 5, 7, 9 messages; then the 10 replayed turns exceed 8 and the oldest leave at once.
    assert counts[:5] == [1, 3, 5, 7, 9]
    assert counts[5] == 5
    context = h.worker.context
    assert isinstance(context, CheckpointContext) and context.replay_drops >= 1
    # Between cuts each request starts with the previous one.
    assert model.bodies[6]["messages"][: len(model.bodies[5]["messages"])] == model.bodies[5]["messages"]
    assert len(_transcript(h.data_dir)) == 16


def test_working_memory_is_capped_in_the_prompt(harness: HarnessFactory) -> None:
    model = Recorder()
    h = harness(model, context={"strategy": "checkpoint", "working_memory_bytes": 256, "jobs": QUIET_JOBS})
    runner = h.worker.cognition
    assert runner is not None
    runner.files.write(runner.files.working_memory, "# Working memory\n" + "- item\n" * 200)
    h.send("hello")
    block = model.memory_block()
    assert "WORKING_MEMORY.md was cut to its cap" in block
    assert block.count("- item") < 50


def test_an_exchange_with_tool_calls_counts_as_one_turn(harness: HarnessFactory) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if body["messages"][0]["role"] != "system":
            return Reply("(job)")
        if body["messages"][-1]["role"] == "tool":
            calls = sum(1 for m in body["messages"] if m["role"] == "tool")
            return Reply("done") if calls >= 3 else Reply.call("list_files", path=".")
        return Reply.call("list_files", path=".")

    h = harness(model, context={"strategy": "checkpoint", "jobs": QUIET_JOBS})
    runner = h.worker.cognition
    assert runner is not None
    h.send("Look around the workspace")
    assert len(_transcript(h.data_dir)) == 8  # the message, 3 calls, 3 results, the answer
    assert runner.pending_turns("consolidation", 100) == 1
    h.send("", kind=ItemKind.HEARTBEAT)  # a tick is counted by the schedule, not as a turn
    assert runner.pending_turns("consolidation", 100) == 1
    h.send("And now?")
    assert runner.pending_turns("consolidation", 100) == 2


def test_after_a_restart_the_replay_starts_at_the_checkpoint(harness: HarnessFactory) -> None:
    model = Recorder()
    h = harness(model, context={"strategy": "checkpoint", "jobs": QUIET_JOBS})
    runner = h.worker.cognition
    assert runner is not None
    h.send("first")
    runner.run("consolidation")
    h.send("second")
    h.send("third")
    # A restart that lost the saved context (or kept one older than the checkpoint).
    (h.settings.runtime_dir / "context.json").unlink()
    restarted = harness(model, context={"strategy": "checkpoint", "jobs": QUIET_JOBS}, data_dir=h.data_dir)
    restarted.send("fourth")
    users = [text.rsplit("]\n", 1)[-1] for text in model.user_texts()]
    assert users == ["second", "third", "fourth"]
    assert "- first" in model.memory_block()

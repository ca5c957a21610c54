"""The context manager's thresholds, driven through the real loop and a scripted model over HTTP."""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Sequence
from typing import Any

from agent_runtime.work.facts import FactStoreError, normalize_fact
from tests.agent_runtime.conftest import Harness, HarnessFactory
from tests.agent_runtime.fakes import Reply, last_text, system_text

REMEMBER = re.compile(r"^remember: (.+)$", re.MULTILINE)


class MemoryStoreFake:
    """A FactStore that keeps everything in lists, and can be told to fail."""

    def __init__(self) -> None:
        self.facts: list[str] = []
        self.episodes: list[dict[str, Any]] = []
        self.failing = False

    def save_facts(self, facts: Sequence[str], turn_ids: Sequence[str]) -> None:
        if self.failing:
            raise FactStoreError("store is down")
        self.facts.extend(facts)

    def add_episode(self, start: str, end: str, turn_ids: Sequence[str], summary: str) -> None:
        if self.failing:
            raise FactStoreError("store is down")
        self.episodes.append({"start": start, "end": end, "turn_ids": list(turn_ids), "summary": summary})


class ScriptedModel:
    """Extracts `remember:` lines on FLUSH_FACTS, summarizes briefly on SUMMARIZE, else chats."""

    def __init__(self, reply_chars: int = 600) -> None:
        self.reply_chars = reply_chars
        self.flush_fails = False
        self.flush_calls = 0
        self.failed_flushes = 0
        self.summaries = 0
        self.request_sizes: list[int] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = system_text(body)
        if "FLUSH_FACTS" in system:
            self.flush_calls += 1
            if self.flush_fails:
                self.failed_flushes += 1
                return Reply(status=400)
            facts = REMEMBER.findall(last_text(body))
            return Reply("\n".join(json.dumps({"fact": fact}) for fact in facts) or "NONE")
        if "SUMMARIZE" in system:
            self.summaries += 1
            return Reply(f"Summary {self.summaries}: the operator sent filler and facts; all was answered.")
        self.request_sizes.append(request_tokens(body))
        return Reply(("ok " * self.reply_chars)[: self.reply_chars])


def request_tokens(body: dict[str, Any]) -> int:
    """The request's size with the same ~4 chars/token rule the fake counter uses."""
    total = 3
    for message in body["messages"]:
        text = f"{message['role']}\n{message.get('content') or ''}"
        if message.get("tool_calls"):
            text += "\n" + json.dumps(message["tool_calls"], separators=(",", ":"), sort_keys=True)
        total += math.ceil(len(text) / 4) + 4
    if body.get("tools"):
        total += math.ceil(len(json.dumps(body["tools"], sort_keys=True)) / 4)
    return total


def retrievable(h: Harness, store: MemoryStoreFake | None) -> set[str]:
    """Facts found in MEMORY.md, in the given fake store, or in the agent's real memory store."""
    memory = (h.data_dir / "workspace" / "MEMORY.md").read_text(encoding="utf-8")
    known = {normalize_fact(line.lstrip("- ")) for line in memory.splitlines()}
    if store is not None:
        known |= {normalize_fact(fact) for fact in store.facts}
    real = h.worker.memory.memory_store
    if real is not None:
        known |= {normalize_fact(fact.text) for fact in real.list_facts(limit=100_000)}
    return known


def in_memory_md(h: Harness) -> set[str]:
    memory = (h.data_dir / "workspace" / "MEMORY.md").read_text(encoding="utf-8")
    return {normalize_fact(line.lstrip("- ")) for line in memory.splitlines()}


def drive(
    h: Harness,
    model: ScriptedModel,
    turns: int,
    store: MemoryStoreFake | None,
    filler_chars: int,
    on_turn: Callable[[int], None] = lambda _turn: None,
    fact_every: int = 3,
    fact_chars: int = 0,
) -> list[str]:
    rng = random.Random(7)
    seeded: list[str] = []
    compactions_seen = 0
    for turn in range(turns):
        on_turn(turn)
        lines = [
            f"filler {turn}: "
            + " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(filler_chars // 6))
        ]
        if turn % fact_every == 0:
            fact = f"fact number {turn} is {rng.randint(1000, 9999)}"
            fact += "".join(f" {rng.choice(['red', 'green', 'blue'])}" for _ in range(fact_chars // 5))
            seeded.append(fact)
            lines.append(f"remember: {fact}")
        result = h.send("\n".join(lines))
        assert result.ok, result.error
        assert h.worker.context.last_tokens <= h.worker.context.window
        compactions = sum(1 for e in h.fake.events if e.type == "compaction.done")
        if compactions > compactions_seen:
            compactions_seen = compactions
            missing = {normalize_fact(f) for f in seeded} - retrievable(h, store)
            assert not missing, f"after compaction {compactions}: facts lost {sorted(missing)[:3]}"
    return seeded


def test_hundreds_of_turns_never_exceed_the_window_and_keep_every_fact(harness: HarnessFactory) -> None:
    model = ScriptedModel(reply_chars=300)
    h = harness(model, context_window=4096)
    seeded = drive(h, model, turns=120, store=None, filler_chars=1000)
    compactions = [e for e in h.fake.events if e.type == "compaction.done"]
    assert len(compactions) >= 10
    assert max(model.request_sizes) <= 4096
    assert h.worker.context.flush()
    wanted = {normalize_fact(f) for f in seeded}
    assert wanted <= in_memory_md(h)
    # The real memory store got each one too, as an extracted fact tied to its turns.
    store = h.worker.memory.memory_store
    assert store is not None
    stored = store.list_facts(limit=100_000)
    assert wanted <= {normalize_fact(f.text) for f in stored}
    assert all(f.source.value == "extracted" and f.turn_ids for f in stored)
    assert len(store.recent_episodes(limit=1000)) == len(compactions)
    status = h.worker.context.status()
    assert status.compactions == len(compactions) and status.flushes >= len(compactions)
    assert status.tokenizer == "cl100k"


def test_memory_md_overflow_goes_to_the_store_only(harness: HarnessFactory) -> None:
    model = ScriptedModel(reply_chars=200)
    h = harness(model, context_window=12_000)
    store = MemoryStoreFake()
    h.worker.context.store = store
    # Long facts fill MEMORY.md past its 16 KiB cap: the oldest move out, into the store only.
    seeded = drive(h, model, turns=80, store=store, filler_chars=900, fact_every=1, fact_chars=240)
    assert h.worker.context.flush()
    memory_size = len((h.data_dir / "workspace" / "MEMORY.md").read_bytes())
    assert memory_size <= 16 * 1024
    assert {normalize_fact(f) for f in seeded} <= retrievable(h, store)
    assert store.episodes and all(
        e["turn_ids"] and e["summary"].startswith("Summary") for e in store.episodes
    )
    assert max(model.request_sizes) <= 12_000


def test_failed_flush_is_retried_and_nothing_is_dropped(harness: HarnessFactory) -> None:
    model = ScriptedModel(reply_chars=300)
    h = harness(model, context_window=4096)

    def outage(turn: int) -> None:
        model.flush_fails = 12 <= turn < 42

    seeded = drive(h, model, turns=70, store=None, filler_chars=1000, on_turn=outage)
    assert model.failed_flushes >= 5
    # While flushes failed, pruning kept requests inside the window...
    assert max(model.request_sizes) <= 4096
    assert any(e.type == "context.pruned" for e in h.fake.events)
    # ...and once they worked again, every fact came through, from the raw turns on disk.
    assert h.worker.context.flush()
    assert {normalize_fact(f) for f in seeded} <= retrievable(h, None)
    assert h.worker.context.backlog == []


def test_decision_uses_the_size_of_the_next_request(harness: HarnessFactory) -> None:
    model = ScriptedModel(reply_chars=100)
    h = harness(model, context_window=8192)
    for turn in range(5):
        h.send(f"remember: small fact {turn}\n" + "words " * 300)
    assert h.worker.context.last_tokens < 0.6 * 8192
    assert not any(e.type == "compaction.done" for e in h.fake.events)
    # The incoming message alone takes the request past 70%: compaction runs before it is sent.
    h.send("big paste: " + "lorem ipsum " * 1000)
    assert any(e.type == "compaction.done" for e in h.fake.events)
    last = h.fake.requests[-1]
    assert any(m["content"].startswith("Summary of the earlier conversation") for m in last["messages"])
    assert model.request_sizes[-1] <= 8192


def test_warning_then_hard_prune_inside_one_huge_item(harness: HarnessFactory) -> None:
    model = ScriptedModel(reply_chars=50)
    h = harness(model, context_window=4096)
    h.send("hi")
    base = model.request_sizes[-1]
    # One message that brings the request to ~85%: nothing to compact, so a warning goes in.
    h.send("a " * ((int(0.85 * 4096) - base) * 2))
    warned = h.fake.requests[-1]["messages"]
    assert any(m["role"] == "system" and m["content"].startswith("[context 8") for m in warned)
    assert any(e.type == "context.warning" for e in h.fake.events)
    # One message bigger than the whole window: pruned and cut, never sent whole.
    h.send("b " * 4096 * 2)
    assert model.request_sizes[-1] <= 4096
    assert "characters cut to fit the context window" in h.fake.requests[-1]["messages"][-1]["content"]
    assert any(e.type == "context.pruned" for e in h.fake.events)
    # The log on disk still has the whole message.
    logged = "".join(p.read_text(encoding="utf-8") for p in (h.data_dir / "history").glob("*.jsonl"))
    assert "b " * 4096 in logged


def test_big_tool_output_counts_before_the_next_call(harness: HarnessFactory) -> None:
    state = {"calls": 0}

    def model(body: dict[str, Any]) -> Reply:
        if "FLUSH_FACTS" in system_text(body) or "SUMMARIZE" in system_text(body):
            return Reply("NONE" if "FLUSH" in system_text(body) else "Summary: reading a file.")
        state["size"] = request_tokens(body)
        if body["messages"][-1]["role"] == "tool":
            return Reply("read it")
        state["calls"] += 1
        return Reply.call("read_file", path="big.txt")

    h = harness(model, context_window=4096)
    (h.data_dir / "workspace" / "big.txt").write_text("z" * 15_000, encoding="utf-8")
    result = h.send("read big.txt")
    assert result.ok
    assert state["size"] <= 4096


def test_history_is_append_only_through_compactions(harness: HarnessFactory) -> None:
    model = ScriptedModel()
    h = harness(model, context_window=4096)
    snapshots: list[str] = []
    for turn in range(40):
        h.send(f"turn {turn} " + "x" * 1200)
        text = "".join(
            p.read_text(encoding="utf-8") for p in sorted((h.data_dir / "history").glob("*.jsonl"))
        )
        if snapshots:
            assert text.startswith(snapshots[-1])
        snapshots.append(text)
    assert any(e.type == "compaction.done" for e in h.fake.events)
    lines = snapshots[-1].splitlines()
    assert len(lines) == 80 and all(json.loads(line)["role"] in ("user", "assistant") for line in lines)


def test_context_survives_a_restart(harness: HarnessFactory) -> None:
    from agent_runtime.process.state import RuntimeState
    from agent_runtime.work.worker import Worker

    model = ScriptedModel(reply_chars=20)
    h = harness(model, context_window=8192)
    h.send("my name is Ada")
    again = Worker(h.settings, h.fake.config, h.worker.client, RuntimeState(), model_retries=0)
    assert [t.content for t in again.context.history][-1] == "ok ok ok ok ok ok ok"
    assert "my name is Ada" in again.context.history[0].content

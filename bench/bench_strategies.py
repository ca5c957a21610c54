"""The two context strategies side by side on one long scripted session.

One session of 300 operator messages (every fourth one reads a file through a tool call) runs
through the real prompt assembly twice: once with the `compact` strategy's context manager
(flush at 60 % of the window, compaction at 70 %), once with the `checkpoint` strategy's (replay
after the consolidation checkpoint, WORKING_MEMORY.md, jobs run when due). The window is 16K
tokens so both strategies act many times. Eight facts are stated in the first 20 messages
("please remember that my locker code is 4512"); message 150 corrects one of them; the last
eight messages ask for each fact.

The model is scripted and deterministic: it extracts the facts a message asks to remember
(the compact strategy's flush, the checkpoint strategy's extraction without a model uses the same
patterns on the user's own words) and summarizes with a fixed text that carries no fact, so the
figures say what each strategy's *mechanism* keeps, not what a model would add. Measured:

- prompt tokens per request (cl100k), mean and largest, and the tokens the strategy's own model
  calls read (flush and summaries; the checkpoint jobs' prompts, whose answers are left unusable
  here so that the jobs keep their deterministic pass), at about 4 characters per token;
- prefix reuse: the share of each request's tokens equal to the previous request's first tokens;
- recall: for each late question, whether the fact's value is in the prompt sent, and whether it
  is in the prompt or in a file the strategy keeps for reading on demand (checkpoint: facts.md,
  preferences.md, projects.md);
- the correction: the new value found and the old one found nowhere (prompt and on-demand files).
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from agent_runtime.cognition.context import CheckpointContext  # noqa: E402
from agent_runtime.cognition.files import SEMANTIC_FILES, CognitionFiles  # noqa: E402
from agent_runtime.cognition.runner import CognitionRunner  # noqa: E402
from agent_runtime.protocol import ContextSettings, InboxItem, ItemKind  # noqa: E402
from agent_runtime.work.condense import FLUSH_MARKER  # noqa: E402
from agent_runtime.work.context import ContextManager  # noqa: E402
from agent_runtime.work.facts import MemoryFileFacts  # noqa: E402
from agent_runtime.work.prompt import current_message  # noqa: E402
from agent_runtime.workspace.history import HistoryLog, Turn  # noqa: E402
from bench.bench_context import (  # noqa: E402
    _agent,
    _cl100k,
    _common_prefix,
    _local_cl100k_counter,
    _render,
    _row,
    _text,
)

Row = dict[str, str]
WINDOW = 16_384
FACTS = [
    ("locker code", "4512"),
    ("manager's name", "Ingrid Holm"),
    ("home city", "Tampere"),
    ("favourite editor", "Helix"),
    ("billing account", "ACCT-7731"),
    ("standup time", "09:40"),
    ("dog's name", "Pixel"),
    ("backup day", "Thursday"),
]
CORRECTED = ("locker code", "4512", "7788")
CORRECTION_AT = 150


class ScriptedModel:
    """Flush: the sentences asking to remember, as facts. Summary: a fixed text with no fact."""

    def __init__(self) -> None:
        self.tokens_read = 0

    def complete(self, system: str, user: str) -> str:
        self.tokens_read += (len(system) + len(user)) // 4
        if FLUSH_MARKER in system:
            facts = [
                line.split("remember that", 1)[1].strip(" .")
                for line in user.splitlines()
                if "remember that" in line
            ]
            return "\n".join(f"- {fact}" for fact in facts) or "NONE"
        return "The operator and the agent worked through the queue of releases and tickets. " + _text(1, 150)


@dataclass
class Result:
    requests: list[list[int]] = field(default_factory=list)
    recalled_in_prompt: int = 0
    recalled_reachable: int = 0
    correction_new: bool = False
    correction_old_gone: bool = False
    model_tokens: int = 0
    replay_cuts: int = 0
    compactions: int = 0


def _message(number: int) -> str:
    text = f"Turn {number}: please look at {_text(number, 60 + (number % 5) * 25)}."
    if 3 <= number < 3 + 2 * len(FACTS) and number % 2 == 1:
        what, value = FACTS[(number - 3) // 2]
        text += f"\nPlease remember that my {what} is {value}."
    if number == CORRECTION_AT:
        what, _old, new = CORRECTED
        text += f"\nCorrection: please remember that my {what} is {new}."
    return text


def _question(number: int, turns: int) -> tuple[str, str] | None:
    index = number - (turns - len(FACTS))
    return FACTS[index] if 0 <= index < len(FACTS) else None


def session(strategy: str, turns: int = 300) -> Result:
    encoding = _cl100k()
    result = Result()
    with tempfile.TemporaryDirectory(prefix=f"flt-bench-{strategy}-") as folder:
        root = Path(folder)
        base, static, registry = _agent(root, WINDOW, _local_cl100k_counter())
        assert base.memory_file is not None
        workspace = base.memory_file.workspace
        model = ScriptedModel()
        clock = [datetime(2026, 5, 1, 9, 0, tzinfo=UTC)]
        runner = None
        context: ContextManager
        common: dict[str, Any] = {
            "window": WINDOW,
            "thresholds": base.thresholds,
            "counter": base.counter,
            "completer": model,
            "memory_file": MemoryFileFacts(workspace),
            "store": None,
            "history_log": HistoryLog(root),
            "state_path": root / ".runtime" / "context.json",
            "tools_text": json.dumps(registry.specs(), sort_keys=True),
        }
        if strategy == "checkpoint":
            settings = ContextSettings(strategy="checkpoint")

            # The jobs call a model that answers nothing usable, so they keep their deterministic
            # pass while the tokens their prompts would cost are counted.
            def model_call(_model: str) -> Callable[[str], str]:
                def complete(prompt: str) -> str:
                    model.tokens_read += len(prompt) // 4
                    return ""

                return complete

            runner = CognitionRunner(
                root, settings, agent_model="bench-model", model_call=model_call, clock=lambda: clock[0]
            )
            context = CheckpointContext(files=CognitionFiles(root), settings=settings, **common)
        else:
            context = ContextManager(**common)
        tools = registry.specs()

        def send() -> str:
            prepared = context.prepare(static())
            rendered = _render(tools, prepared.messages)
            result.requests.append(encoding.encode_ordinary(rendered))
            return rendered

        for number in range(turns):
            clock[0] += timedelta(minutes=3)
            asked = _question(number, turns)
            text = f"What is my {asked[0]}?" if asked else _message(number)
            item = InboxItem(
                id=f"i{number}",
                kind=ItemKind.OPERATOR_MESSAGE,
                created_at=clock[0],
                sender="operator",
                text=text,
            )
            context.begin_item()
            context.add(Turn("user", current_message(item, workspace, 48 * 1024, now=clock[0])))
            prompt = send()
            if asked:
                _score(result, root, prompt, asked)
            if number % 4 == 0 and not asked:
                call_id = f"call_{number}"
                call: dict[str, Any] = {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "queue.md"}'},
                }
                context.add(Turn("assistant", "", tool_calls=(call,)))
                output = registry.dispatch("read_file", {"path": "queue.md"}).output
                context.add(Turn("tool", output, tool_call_id=call_id, name="read_file"))
                send()
            context.add(
                Turn("assistant", f"Done with turn {number}. " + _text(number + 100, 120 + (number % 3) * 60))
            )
            context.end_item()
            if runner is not None:
                for job, trigger in runner.due():
                    runner.run(job, trigger)
        result.model_tokens = model.tokens_read
        result.compactions = context.compactions
        if isinstance(context, CheckpointContext):
            result.replay_cuts = context.replay_drops
    return result


def _on_demand(root: Path) -> str:
    folder = root / "workspace" / "cognition"
    return "\n".join((folder / name).read_text() for name in SEMANTIC_FILES if (folder / name).exists())


def _score(result: Result, root: Path, prompt: str, asked: tuple[str, str]) -> None:
    what, value = asked
    reachable = prompt + "\n" + _on_demand(root)
    if what == CORRECTED[0]:
        value = CORRECTED[2]
        result.correction_new = value in reachable
        result.correction_old_gone = CORRECTED[1] not in reachable
    result.recalled_in_prompt += value in prompt
    result.recalled_reachable += value in reachable


def _prefix_shares(requests: list[list[int]]) -> list[float]:
    return [_common_prefix(prev, cur) / len(cur) for prev, cur in itertools.pairwise(requests)]


def run(quick: bool) -> list[Row]:
    turns = 120 if quick else 300
    rows: list[Row] = []
    for strategy in ("compact", "checkpoint"):
        result = session(strategy, turns)
        sizes = [len(request) for request in result.requests]
        shares = _prefix_shares(result.requests)
        name = f"strategies ({strategy})"
        rows += [
            _row(name, f"requests in a {turns}-message session", str(len(sizes))),
            _row(name, "prompt tokens per request, mean (cl100k)", f"{statistics.fmean(sizes):.0f}"),
            _row(name, "prompt tokens per request, largest", str(max(sizes))),
            _row(name, "tokens read by the strategy's own model calls", str(result.model_tokens)),
            _row(name, "prompt prefix reused, mean", f"{100 * statistics.fmean(shares):.1f} %", ">= 90 %"),
            _row(name, "early facts in the prompt when asked", f"{result.recalled_in_prompt}/{len(FACTS)}"),
            _row(
                name,
                "early facts in the prompt or in files read on demand",
                f"{result.recalled_reachable}/{len(FACTS)}",
            ),
            _row(
                name,
                "correction respected (new value found, old one nowhere)",
                "yes"
                if result.correction_new and result.correction_old_gone
                else f"no (new found: {result.correction_new}, old gone: {result.correction_old_gone})",
            ),
            _row(
                name,
                "prefix breaks by design (compactions; checkpoint moves) / replay cuts",
                f"{result.compactions} / {result.replay_cuts}",
            ),
        ]
    return rows


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row['benchmark']:<24} {row['metric']:<58} {row['value']:>10} {row['target']}")

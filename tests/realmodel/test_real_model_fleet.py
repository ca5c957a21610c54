"""A fleet whose agents use a real model (SmolLM2-135M on llama-cpp-python's server) through the
gateway, on the process runtime. The assertions are about the protocol and Flotilla's behaviour
(replies stream back, usage and cost are recorded, the context is compacted within the model's
window, heartbeats run, a weak model's tool use ends), never about what the model says.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from realmodel_harness import MODEL_WINDOW, free_port

pytestmark = pytest.mark.realmodel

PRICE_IN, PRICE_OUT = 0.5, 1.5  # per million tokens: small, so that every run has a cost


def fleet_yaml(url: str) -> str:
    return f"""\
version: 1
fleet: realmodel
llm:
  default_model: llamacpp:smollm2
  providers:
    llamacpp: {{base_url: "{url}", timeout_s: 300}}
  models:
    llamacpp:smollm2:
      context_window: {MODEL_WINDOW}
      input_per_mtok: {PRICE_IN}
      output_per_mtok: {PRICE_OUT}
agents:
  talker:
    role: answers in one short sentence
  reader:
    role: reads long notes and answers in one short sentence
  ticker:
    role: keeps time
    heartbeat:
      every: 30s
      rules:
        - "every 30s: answer HEARTBEAT_OK"
"""


LONG_NOTE_WORDS = 900
MAX_LONG_NOTES = 9


def flotilla(folder: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli.main", *args, "--file", str(folder / "fleet.yaml")],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=os.environ.copy(),
    )


@pytest.fixture(scope="module")
def fleet(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("realmodel-fleet")
    (folder / "fleet.yaml").write_text(fleet_yaml(llama_server))
    try:
        started = flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        flotilla(folder, "down", "-v")


def send(folder: Path, agent: str, text: str) -> str:
    result = flotilla(folder, "send", agent, text, "--timeout", "300")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def turns(folder: Path, agent: str) -> list[dict[str, Any]]:
    result = flotilla(folder, "runs", agent, "--kind", "turn", "--json", "-n", "100")
    assert result.returncode == 0, result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return found


def state(folder: Path, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with sqlite3.connect(folder / ".flotilla" / "state.db") as db:
        return db.execute(sql, params).fetchall()


def server_streams_usage(url: str) -> bool:
    """Whether this server reports usage at the end of a stream when asked (the gateway asks)."""
    body = {
        "model": "smollm2",
        "messages": [{"role": "user", "content": "Say yes."}],
        "max_tokens": 4,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream("POST", f"{url}/chat/completions", json=body, timeout=120) as response:
        for line in response.iter_lines():
            data = line[5:].strip() if line.startswith("data:") else ""
            if data and data != "[DONE]" and json.loads(data).get("usage"):
                return True
    return False


def test_a_reply_streams_back_and_its_usage_and_cost_are_recorded(fleet: Path, llama_server: str) -> None:
    reply = send(fleet, "talker", "Say hello to the operator.")
    assert reply.strip()
    [turn] = turns(fleet, "talker")
    assert (turn["outcome"], turn["model"]) == ("ok", "llamacpp:smollm2")
    assert turn["tokens_in"] > 0 and turn["tokens_out"] > 0
    cost = (turn["tokens_in"] * PRICE_IN + turn["tokens_out"] * PRICE_OUT) / 1_000_000
    assert turn["cost_usd"] == pytest.approx(cost)
    rows = state(fleet, "SELECT status, estimated FROM gateway_usage WHERE run_id = ?", turn["id"])
    assert rows and all(status == "ok" for status, _ in rows)
    # Usage is recorded whether or not the server streams it: counted by the gateway if not.
    reported = server_streams_usage(llama_server)
    assert all(bool(estimated) is not reported for _, estimated in rows)


def test_a_heartbeat_runs_the_model(fleet: Path) -> None:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        beats = [t for t in turns(fleet, "ticker") if t["trigger"] == "heartbeat"]
        if beats:
            break
        time.sleep(2)
    else:
        raise AssertionError("no heartbeat turn within 240 s")
    assert beats[0]["outcome"] in {"ok", "idle"} and beats[0]["tokens_in"] > 0


def test_tool_use_by_a_weak_model_ends_without_a_stuck_loop(fleet: Path) -> None:
    """Whatever the model does with the tool catalog (a call, a malformed call, plain text),
    the run ends within the loop's limits and the agent takes the next item."""
    send(fleet, "talker", "Use the list_files tool to list your workspace, then name one file.")
    last = turns(fleet, "talker")[0]
    assert last["outcome"] in {"ok", "limit"}
    [(calls,)] = state(
        fleet, "SELECT COUNT(*) FROM gateway_usage WHERE run_id = ? AND kind = 'chat'", last["id"]
    )
    assert 1 <= calls <= 12 + 2  # the loop's max_iterations, plus a possible flush and summary
    assert send(fleet, "talker", "Say goodbye.").strip()


def _long_note(number: int) -> str:
    words = " ".join(f"ledger{number}-{index} entry" for index in range(LONG_NOTE_WORDS // 2))
    return f"Note {number}. Keep it in mind and answer only 'noted'. {words}"


def test_a_long_session_compacts_within_the_models_window_and_keeps_working(fleet: Path) -> None:
    compacted = False
    for number in range(1, MAX_LONG_NOTES + 1):
        send(fleet, "reader", _long_note(number))
        if state(fleet, "SELECT 1 FROM events WHERE type = 'compaction.done' AND agent = 'reader'"):
            compacted = True
            break
    assert compacted, f"no compaction after {MAX_LONG_NOTES} long notes"
    assert send(fleet, "reader", "Say done.").strip()
    assert turns(fleet, "reader")[0]["outcome"] == "ok"
    # Every request fitted the model's real window: the server refused none of them.
    failed = state(fleet, "SELECT error FROM gateway_usage WHERE agent = 'reader' AND status != 'ok'")
    assert failed == []
    [(largest,)] = state(fleet, "SELECT MAX(tokens_in) FROM gateway_usage WHERE agent = 'reader'")
    assert largest < MODEL_WINDOW

"""A fleet whose agents use a real model (SmolLM2-135M on llama-cpp-python's server) through the
gateway, on the process runtime. The assertions are about the protocol and Flotilla's behaviour
(replies stream back, usage and cost are recorded, heartbeats run, a weak model's tool use
ends), never about what the model says.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from realmodel_harness import MODEL, PRICE_IN, PRICE_OUT, running_fleet, send, state, turns

from orchestrator.gateway.tokens import token_counter

pytestmark = pytest.mark.realmodel

AGENTS = """\
  talker:
    role: answers in one short sentence
  ticker:
    role: keeps time
    heartbeat:
      every: 30s
      rules:
        - "every 30s: answer HEARTBEAT_OK"
"""


@pytest.fixture(scope="module")
def fleet(llama_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with running_fleet(tmp_path_factory.mktemp("realmodel-fleet"), llama_server, AGENTS) as folder:
        yield folder


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


def agent_client(folder: Path, agent: str) -> openai.OpenAI:
    """The official client with the agent's own token, as the agent's runtime holds it."""
    endpoint = json.loads((folder / ".flotilla" / "endpoint.json").read_text())
    token = (folder / ".flotilla" / "tokens" / agent).read_text().strip()
    return openai.OpenAI(base_url=endpoint["url"] + "/v1", api_key=token, max_retries=0)


def test_a_stream_through_the_gateway_ends_with_usage_the_server_did_not_send(
    fleet: Path, llama_server: str
) -> None:
    client = agent_client(fleet, "talker")
    # Greedy decoding: the same reply on every run of this server and model.
    stream = client.chat.completions.create(
        model=MODEL,
        messages=[
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Count from one to ten."},
        ],
        max_tokens=24,
        temperature=0,
        seed=7,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    client.close()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    usages = [c.usage for c in chunks if c.usage is not None]
    assert len(chunks) > 2 and len(usages) == 1  # streamed piece by piece, then one usage chunk
    assert usages[0].prompt_tokens > 0 and usages[0].completion_tokens > 0
    [row] = state(
        fleet,
        "SELECT tokens_in, tokens_out, estimated FROM gateway_usage WHERE agent = 'talker' "
        "AND kind = 'chat' ORDER BY id DESC LIMIT 1",
    )
    assert row[:2] == (usages[0].prompt_tokens, usages[0].completion_tokens)
    # Usage is recorded whether or not the server streams it: counted by the gateway if not.
    assert bool(row[2]) is not server_streams_usage(llama_server)
    assert text.strip()
    if row[2]:  # counted by the gateway: the streamed text in cl100k
        assert usages[0].completion_tokens == token_counter().count(text)


def test_an_agent_turn_records_the_ledgers_tokens_and_cost(fleet: Path) -> None:
    send(fleet, "talker", "Say hello to the operator.")
    [turn] = turns(fleet, "talker")
    assert turn["outcome"] in {"ok", "limit"} and turn["model"] == MODEL
    assert turn["tokens_in"] > 0
    cost = (turn["tokens_in"] * PRICE_IN + turn["tokens_out"] * PRICE_OUT) / 1_000_000
    assert turn["cost_usd"] == pytest.approx(cost) and turn["cost_usd"] > 0
    rows = state(fleet, "SELECT status FROM gateway_usage WHERE run_id = ?", turn["id"])
    assert rows and all(status == "ok" for (status,) in rows)


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
    send(fleet, "talker", "Say goodbye.")
    assert turns(fleet, "talker")[0]["outcome"] in {"ok", "limit"}

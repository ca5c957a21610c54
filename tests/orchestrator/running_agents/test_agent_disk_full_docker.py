"""An agent at its disk quota on the real Docker daemon: its /data (a 16 MiB ext4 volume) is
filled from inside the container, as the agent's own user; it keeps answering, `ps` and the
fleet status say the disk is full, `agent.disk_full` is published once for the episode, no
accepted item is lost, and once space is freed the state clears."""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import fleet_status, free_port, run_flotilla, wait_for

pytestmark = pytest.mark.docker

FLEET = """\
version: 1
fleet: {name}
defaults:
  always_on: true
agents:
  writer:
    role: an agent whose disk fills up
    resources:
      disk: 16m
alerts:
  webhooks:
    ops:
      url: http://127.0.0.1:{port}/hook
  rules:
    - when: disk_full
"""
# Writes until the volume refuses: what an agent (or a tool it ran) filling its own disk does.
FILL = """
import errno
written = 0
with open("/data/filler.bin", "wb", buffering=0) as out:
    while True:
        try:
            written += out.write(b"x" * 65536)
        except OSError as full:
            assert full.errno in (errno.ENOSPC, errno.EDQUOT), full
            break
        if written > 64 * 1024 * 1024:
            raise SystemExit("the quota was not enforced")
print(written)
"""


def flotilla(folder: Path, *args: str) -> str:
    result = run_flotilla(folder, *args, timeout=300)
    assert result.returncode == 0, f"flotilla {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def events_of(folder: Path, kind: str) -> list[dict[str, Any]]:
    events = json.loads(flotilla(folder, "events", "--json", "--agent", "writer"))
    return [event for event in events if event["type"] == kind]


class Hook(BaseHTTPRequestHandler):
    """The operator's webhook, on loopback: keeps the alerts it is sent."""

    received: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        Hook.received.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def hook() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def fleet(
    agent_image: ImageBuildResult, hook: ThreadingHTTPServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("diskfull")
    name = f"flt-test-diskfull-{secrets.token_hex(3)}"
    (folder / "fleet.yaml").write_text(FLEET.format(name=name, port=hook.server_address[1]))
    try:
        flotilla(
            folder, "up", "-d", "--runtime", "docker", "--port", str(free_port()), "--image", agent_image.tag
        )
        yield folder
    finally:
        run_flotilla(folder, "down", "-v")


def test_an_agent_at_its_disk_quota_keeps_answering_says_so_and_recovers(fleet: Path) -> None:
    assert "before the disk fills" in flotilla(fleet, "send", "writer", "before the disk fills")
    written = int(flotilla(fleet, "exec", "writer", "--", "python3", "-c", FILL).strip())
    assert 0 < written < 16 * 1024 * 1024

    answer = flotilla(fleet, "send", "writer", "while the disk is full " + "padding " * 4000)
    assert "] while the disk is full" in answer  # it answered: the item was delivered

    wait_for(lambda: fleet_status(fleet)["writer"].get("disk_full") is True, "the status to say so", 60)
    assert "disk full" in flotilla(fleet, "ps")
    assert "] once more" in flotilla(fleet, "send", "writer", "once more")
    flotilla(fleet, "restart", "writer")  # a new process at a full disk: it starts and answers
    assert "] after a restart" in flotilla(fleet, "send", "writer", "after a restart")
    wait_for(lambda: fleet_status(fleet)["writer"].get("disk_full") is True, "the restart to say so", 60)
    (full,) = events_of(fleet, "agent.disk_full")  # once for the episode, not once per item or start
    assert full["data"]["free_bytes"] < 1024 * 1024
    status = fleet_status(fleet)["writer"]
    assert status["pending"] == 0 and status["dead_letters"] == 0  # nothing accepted was lost

    flotilla(fleet, "exec", "writer", "--", "python3", "-c", "import os; os.remove('/data/filler.bin')")
    wait_for(lambda: fleet_status(fleet)["writer"].get("disk_full") is False, "the state to clear", 90)
    assert "disk full" not in flotilla(fleet, "ps")
    logs = flotilla(fleet, "logs", "writer")
    assert "the agent's disk is full" in logs and "freed" in logs and "has room again" in logs
    assert "the saved context was not written" in logs and "the work loop failed" not in logs
    assert len(events_of(fleet, "agent.disk_freed")) == 1
    assert len(events_of(fleet, "agent.disk_full")) == 1
    assert "] after freeing" in flotilla(fleet, "send", "writer", "after freeing")
    wait_for(lambda: len(Hook.received) >= 2, "the alert and its resolution to reach the webhook", 60)
    assert [(alert["alert"], alert["status"], alert["agent"]) for alert in Hook.received] == [
        ("disk_full", "firing", "writer"),
        ("disk_full", "resolved", "writer"),
    ]

"""A signed hook wakes an agent in a Docker container, which notifies a channel: the request
reaches the orchestrator's loopback address, the item reaches the container over its link, and
the notification leaves from the orchestrator to a receiver on the host's loopback (the operator's
configuration may name loopback; the agent itself reaches nothing but the orchestrator)."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.hooks.signatures import github_signature
from orchestrator.images.build import ImageBuildResult
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, wait_for
from tests.docker_fixtures import unique
from tests.orchestrator.notifications.servers import HttpReceiver

pytestmark = pytest.mark.docker

HOOK_SECRET = f"hook-{secrets.token_hex(16)}"
FLEET = """\
version: 1
fleet: {name}
runtime: docker
secrets:
  hook_secret: {{env: HOOK_SECRET}}
channels:
  review-room: {{type: webhook, url: "{receiver}/notify"}}
hooks:
  github: {{agent: reviewer, secret: hook_secret, signature: github}}
agents:
  reviewer:
    role: reviews pull requests
    model: test
    resources: {{ memory: 192m }}
    channels: [review-room]
"""


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    running = HttpReceiver().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def fleet_dir(tmp_path: Path, agent_image: ImageBuildResult, receiver: HttpReceiver) -> Iterator[Path]:
    folder = tmp_path / "fleet"
    folder.mkdir()
    (folder / "fleet.yaml").write_text(FLEET.format(name=unique("hooks"), receiver=receiver.url))
    env = {**os.environ, "HOOK_SECRET": HOOK_SECRET}
    try:
        started = run_flotilla(folder, "up", "-d", "--port", str(free_port()), timeout=900, env=env)
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v", env=env)


def test_a_signed_hook_wakes_an_agent_in_a_container_which_notifies_a_channel(
    fleet_dir: Path, receiver: HttpReceiver, docker_client: Any
) -> None:
    endpoint = read_endpoint(StatePaths.for_fleet_file(fleet_dir / "fleet.yaml"))
    assert endpoint is not None
    # With the `test` model, the payload's text is what steers the agent: here, to its notify tool
    # (a text payload: in a JSON one the directive's quotes would arrive escaped).
    body = b'PR 7 opened. call notify {"channel": "review-room", "text": "PR 7 is waiting for a review"}'
    response = httpx.post(
        f"{endpoint.url}/hooks/github",
        content=body,
        headers={
            "content-type": "text/plain",
            "x-github-event": "pull_request",
            "x-github-delivery": "docker-1",
            "x-hub-signature-256": github_signature(HOOK_SECRET, body),
        },
        timeout=30,
    )
    assert response.status_code == 202, response.text
    item_id = response.json()["item_id"]
    forged = httpx.post(
        f"{endpoint.url}/hooks/github",
        content=body,
        headers={"x-hub-signature-256": github_signature("guess", body)},
        timeout=30,
    )
    assert forged.status_code == 401
    status: dict[str, Any] = {}
    for _ in range(3):  # up to three minutes on a loaded machine
        status = httpx.get(
            f"{endpoint.url}/api/v1/items/{item_id}?wait=60",
            headers={"authorization": f"Bearer {endpoint.token}"},
            timeout=120,
        ).json()
        if status["state"] == "done":
            break
    assert status["state"] == "done", status
    assert "notify returned: sent to review-room" in status["result"]["text"]
    wait_for(lambda: bool(receiver.on("/notify")), "the notification", deadline_s=120)
    (got,) = receiver.on("/notify")
    assert got.json()["agent"] == "reviewer" and got.json()["text"] == "PR 7 is waiting for a review"
    (container,) = [c for c in docker_client.containers.list() if "reviewer" in c.name]
    assert HOOK_SECRET not in json.dumps(container.attrs["Config"]["Env"])

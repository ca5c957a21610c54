"""The http_request tool end to end: an agent in a Docker container asks, the orchestrator makes the
request on the host (to a local site on 127.0.0.1) under the agent's policy, and the secret it
fills in reaches the site but nothing the agent, the records or a backup hold."""

from __future__ import annotations

import json
import os
import secrets
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET
from orchestrator.images.build import ImageBuildResult
from orchestrator.testing.cli import free_port, run_flotilla, start_flotilla, wait_for
from tests.docker_fixtures import unique
from tests.orchestrator.egress.fake_site import FakeSite, start_site

pytestmark = pytest.mark.docker

TOKEN = f"demo-{secrets.token_hex(16)}"
FLEET = """\
version: 1
fleet: {name}
runtime: docker
secrets:
  demo_token: {{env: DEMO_TOKEN}}
agents:
  researcher:
    role: fetches data for the operator
    resources: {{ memory: 192m }}
    tools:
      http:
        allow:
          - {{url: "http://127.0.0.1:{port}/", allow_private: true}}
          - "http://localhost:{port}/"
        methods: [GET, POST]
        approval: {{POST: required}}
        secrets: [demo_token]
  frugal:
    role: fetches little
    resources: {{ memory: 192m }}
    tools:
      http: {{allow: ["http://127.0.0.1:{port}/"], allow_private: true, requests_per_day: 1}}
"""


@pytest.fixture(scope="module")
def site() -> Iterator[FakeSite]:
    running = start_site()
    yield running
    running.close()


def env() -> dict[str, str]:
    return {**os.environ, "DEMO_TOKEN": TOKEN}


@pytest.fixture(scope="module")
def fleet_dir(
    tmp_path_factory: pytest.TempPathFactory, agent_image: ImageBuildResult, site: FakeSite
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("http-fleet")
    (folder / "fleet.yaml").write_text(FLEET.format(name=unique("http"), port=site.port))
    try:
        started = run_flotilla(folder, "up", "-d", "--port", str(free_port()), timeout=900, env=env())
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v", env=env())


def send(folder: Path, agent: str, text: str) -> str:
    result = run_flotilla(folder, "send", agent, text, timeout=300, env=env())
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def call(tool_arguments: dict[str, Any]) -> str:
    return f"call http_request {json.dumps(tool_arguments)}"


def events_of(folder: Path, agent: str, kind: str) -> list[dict[str, Any]]:
    out = run_flotilla(folder, "events", "--agent", agent, "--json", "-n", "500", env=env()).stdout
    return [event for event in json.loads(out) if event["type"] == kind]


def test_an_allowed_get_with_a_secret_is_answered_and_the_secret_stays_on_the_host(
    fleet_dir: Path, site: FakeSite, docker_client: Any, tmp_path: Path
) -> None:
    arguments = {
        "method": "GET",
        "url": site.url("/auth"),
        "headers": {"Authorization": "Bearer {{secret:demo_token}}"},
    }
    reply = send(fleet_dir, "researcher", call(arguments))
    assert "http_request returned: HTTP 200 OK" in reply
    assert any(seen.headers.get("authorization") == f"Bearer {TOKEN}" for seen in site.seen)
    assert TOKEN not in reply
    assert "you sent: Bearer {{secret:demo_token}}" in reply  # the echo comes back redacted
    (event,) = [
        e for e in events_of(fleet_dir, "researcher", "http.requested") if "/auth" in e["data"]["url"]
    ]
    assert event["data"]["status"] == 200 and event["data"]["method"] == "GET" and event["data"]["bytes"] > 0

    in_query = send(fleet_dir, "researcher", call({"url": site.url("/data?key={{secret:demo_token}}")}))
    assert "HTTP 200 OK" in in_query and site.seen[-1].path == f"/data?key={TOKEN}"

    _assert_nowhere(fleet_dir, docker_client, tmp_path)


def test_a_key_in_an_operators_message_is_on_no_disk(
    fleet_dir: Path, docker_client: Any, tmp_path: Path
) -> None:
    key = f"sk-live-{secrets.token_hex(12)}"
    reply = send(fleet_dir, "researcher", f"Use API key {key} for billing")
    assert key not in reply
    _assert_nowhere(fleet_dir, docker_client, tmp_path, key)


def _assert_nowhere(fleet_dir: Path, docker_client: Any, tmp_path: Path, value: str = TOKEN) -> None:
    """The value is in no file of the fleet folder (state.db and its WAL, logs, workspaces), no
    record the operator's API serves (history, runs, events: what the dashboard shows), not in
    the agent's container (environment, storage, its log) and not in a backup."""
    secret = value.encode()
    for path in fleet_dir.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), f"the secret is in {path}"
    for command in (
        ("history", "researcher", "--json", "-n", "50"),
        ("runs", "researcher", "--json", "-n", "50"),
        ("events", "--json", "-n", "500"),
    ):
        shown = run_flotilla(fleet_dir, *command, env=env())
        assert shown.returncode == 0, shown.stderr
        assert value not in shown.stdout, command
    fleet = yaml.safe_load((fleet_dir / "fleet.yaml").read_text())["fleet"]
    labels = [f"{LABEL_FLEET}={fleet}", f"{LABEL_AGENT}=researcher"]
    (container,) = docker_client.containers.list(filters={"label": labels})
    assert value not in json.dumps(container.attrs["Config"]["Env"])
    found = container.exec_run(["grep", "-r", "-l", "-s", value, "/data", "/tmp", "/proc/1/environ"])
    assert found.output.strip() == b"", found.output
    assert secret not in container.logs()
    archive = tmp_path / "backup.tar"
    made = run_flotilla(fleet_dir, "backup", "-o", str(archive), timeout=300, env=env())
    assert made.returncode == 0, made.stdout + made.stderr
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            data = tar.extractfile(member)
            if data is not None:
                assert secret not in data.read(), f"the secret is in the backup's {member.name}"


def test_a_url_outside_the_policy_is_refused_naming_the_rule(fleet_dir: Path, site: FakeSite) -> None:
    before = len(site.seen)
    reply = send(fleet_dir, "researcher", call({"url": f"http://127.0.0.2:{site.port}/data"}))
    assert "tools.http.allow" in reply and "matches no allowed URL pattern" in reply
    reply = send(fleet_dir, "researcher", call({"method": "DELETE", "url": site.url("/data")}))
    assert "tools.http.methods: DELETE is not allowed" in reply
    assert len(site.seen) == before
    refused = events_of(fleet_dir, "researcher", "http.refused")
    assert any("tools.http.allow" in e["data"]["rule"] for e in refused)


def test_a_redirect_to_a_private_address_is_refused(fleet_dir: Path, site: FakeSite) -> None:
    target = f"http://localhost:{site.port}/data"
    reply = send(fleet_dir, "researcher", call({"url": site.url(f"/redirect?to={target}")}))
    assert "is a loopback address" in reply
    assert not any(
        seen.path == "/data" and seen.headers.get("host", "").startswith("localhost") for seen in site.seen
    )


def test_a_name_resolving_to_a_private_address_is_refused(fleet_dir: Path, site: FakeSite) -> None:
    before = len(site.seen)
    reply = send(fleet_dir, "researcher", call({"url": f"http://localhost:{site.port}/data"}))
    assert "localhost (resolved to" in reply and "loopback address" in reply
    assert len(site.seen) == before


def test_a_post_waits_for_the_operators_approval(fleet_dir: Path, site: FakeSite) -> None:
    arguments = {"method": "POST", "url": site.url("/echo"), "body": "report=ready"}
    waiting = start_flotilla(fleet_dir, "send", "researcher", call(arguments), env=env())
    pending: list[dict[str, Any]] = []

    def asked() -> bool:
        out = run_flotilla(fleet_dir, "approvals", "--json", env=env()).stdout
        pending[:] = [
            item for item in json.loads(out) if item["agent"] == "researcher" and item["state"] == "pending"
        ]
        return len(pending) == 1

    wait_for(asked, "the approval item of the POST", deadline_s=180)
    assert pending[0]["tool"] == "http_request.POST"
    assert not any(seen.method == "POST" for seen in site.seen)
    assert run_flotilla(fleet_dir, "approve", pending[0]["id"], env=env()).returncode == 0
    out, err = waiting.communicate(timeout=180)
    assert waiting.returncode == 0, err
    assert "http_request returned: HTTP 200 OK" in out
    assert [seen.body for seen in site.seen if seen.method == "POST"] == [b"report=ready"]


def test_the_daily_budget_is_enforced(fleet_dir: Path, site: FakeSite) -> None:
    first = send(fleet_dir, "frugal", call({"url": site.url("/data")}))
    assert "HTTP 200 OK" in first
    second = send(fleet_dir, "frugal", call({"url": site.url("/data")}))
    assert "tools.http.requests_per_day: 1 requests a day" in second

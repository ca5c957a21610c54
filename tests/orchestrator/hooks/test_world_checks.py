"""The acceptance flows of acting in the world, as an operator runs them with the CLI on the real
Docker daemon (`flotilla up -d`, `flotilla send ...`), against local servers on 127.0.0.1
(ephemeral ports): a researcher whose http_request carries a secret by handle and whose exec
answers `print(6*7)`; a signed hook that reaches the coordinator and a forged one refused; the
coordinator's notify reaching a webhook receiver and an SMTP server; and a notify that needs the
operator's approval, refused when called directly and run once approved when the agent waits."""

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
from orchestrator.state.endpoint import Endpoint, read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, start_flotilla, wait_for
from tests.docker_fixtures import unique
from tests.orchestrator.egress.fake_site import FakeSite, start_site
from tests.orchestrator.notifications.servers import HttpReceiver, SmtpSink

pytestmark = pytest.mark.docker

DEMO_TOKEN = f"demo-{secrets.token_hex(16)}"
HOOK_SECRET = f"hook-{secrets.token_hex(16)}"
FLEET = """\
version: 1
fleet: {name}
runtime: docker
secrets:
  demo_token: {{env: DEMO_TOKEN}}
  hook_secret: {{env: HOOK_SECRET}}
channels:
  ops-hook: {{type: webhook, url: "{receiver}/notify"}}
  ops-mail: {{type: email, smtp: {{host: 127.0.0.1, port: {smtp_port}}}, from: "fleet@example.test", to: ["ops@example.test"]}}
hooks:
  github: {{agent: coordinator, secret: hook_secret, signature: github}}
agents:
  researcher:
    role: fetches data and runs small scripts
    resources: {{ memory: 192m }}
    tools:
      http: {{allow: ["http://127.0.0.1:{site_port}/"], allow_private: true, secrets: [demo_token]}}
      exec: {{timeout_s: 10}}
  coordinator:
    role: tells the operators what happened
    resources: {{ memory: 192m }}
    channels: [ops-hook, ops-mail]
  careful:
    role: tells the operators only with their leave
    resources: {{ memory: 192m }}
    channels: [ops-hook]
    tools:
      rules: {{notify: {{approval: required}}}}
"""


def env() -> dict[str, str]:
    return {**os.environ, "DEMO_TOKEN": DEMO_TOKEN, "HOOK_SECRET": HOOK_SECRET}


@pytest.fixture(scope="module")
def site() -> Iterator[FakeSite]:
    running = start_site()
    yield running
    running.close()


@pytest.fixture(scope="module")
def receiver() -> Iterator[HttpReceiver]:
    running = HttpReceiver().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def smtp() -> Iterator[SmtpSink]:
    sink = SmtpSink().start()
    try:
        yield sink
    finally:
        sink.stop()


@pytest.fixture(scope="module")
def fleet_dir(
    tmp_path_factory: pytest.TempPathFactory,
    agent_image: ImageBuildResult,
    site: FakeSite,
    receiver: HttpReceiver,
    smtp: SmtpSink,
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("world-fleet")
    fleet = FLEET.format(
        name=unique("world"), site_port=site.port, receiver=receiver.url, smtp_port=smtp.port
    )
    (folder / "fleet.yaml").write_text(fleet)
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


def endpoint_of(folder: Path) -> Endpoint:
    endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
    assert endpoint is not None
    return endpoint


def tool_calls(folder: Path, agent: str, name: str) -> list[dict[str, Any]]:
    result = run_flotilla(folder, "runs", agent, "--kind", "turn", "--json", "-n", "50", env=env())
    assert result.returncode == 0, result.stderr
    return [call for run in json.loads(result.stdout) for call in run["tool_calls"] if call["name"] == name]


def test_http_request_carries_the_secret_to_the_local_server(fleet_dir: Path, site: FakeSite) -> None:
    call = {
        "method": "GET",
        "url": site.url("/data"),
        "headers": {"Authorization": "Bearer {{secret:demo_token}}"},
    }
    reply = send(fleet_dir, "researcher", f"call http_request {json.dumps(call)}")
    assert "http_request returned: HTTP 200 OK" in reply and DEMO_TOKEN not in reply
    (seen,) = [seen for seen in site.seen if seen.path == "/data"]
    assert seen.headers["authorization"] == f"Bearer {DEMO_TOKEN}"
    (recorded,) = tool_calls(fleet_dir, "researcher", "http_request")
    assert recorded["ok"] is True and recorded["source"] == "host"


def test_exec_answers_42(fleet_dir: Path) -> None:
    reply = send(fleet_dir, "researcher", 'call exec {"command": "python3 -c \\"print(6*7)\\""}')
    assert "exec returned: exit code 0" in reply and "42" in reply
    (recorded,) = tool_calls(fleet_dir, "researcher", "exec")
    assert recorded["ok"] is True and recorded["source"] == "host"
    shown = run_flotilla(fleet_dir, "history", "researcher", "-n", "1", env=env()).stdout
    assert "→ exec(" in shown and "[host tool]" in shown


def test_a_signed_github_hook_reaches_the_coordinator_and_a_forged_one_is_refused(
    fleet_dir: Path,
) -> None:
    endpoint = endpoint_of(fleet_dir)
    body = json.dumps({"action": "opened", "pull_request": {"number": 12, "title": "Fix the tides"}})
    signed = httpx.post(
        f"{endpoint.url}/hooks/github",
        content=body,
        headers={
            "content-type": "application/json",
            "x-github-event": "pull_request",
            "x-github-delivery": f"world-{secrets.token_hex(4)}",
            "x-hub-signature-256": github_signature(HOOK_SECRET, body.encode()),
        },
        timeout=30,
    )
    assert signed.status_code == 202, signed.text
    item_id = signed.json()["item_id"]
    forged = httpx.post(
        f"{endpoint.url}/hooks/github",
        content=body,
        headers={
            "content-type": "application/json",
            "x-hub-signature-256": github_signature("a guess", body.encode()),
        },
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
    shown = run_flotilla(fleet_dir, "history", "coordinator", "-n", "1", env=env()).stdout
    assert "Fix the tides" in shown


def test_notify_reaches_the_webhook_receiver_and_the_smtp_server(
    fleet_dir: Path, receiver: HttpReceiver, smtp: SmtpSink
) -> None:
    reply = send(fleet_dir, "coordinator", 'call notify {"channel": "ops-hook", "text": "build failed"}')
    assert "notify returned: sent to ops-hook" in reply
    wait_for(lambda: bool(receiver.on("/notify")), "the webhook notification", deadline_s=60)
    (got,) = receiver.on("/notify")
    assert got.json()["agent"] == "coordinator" and got.json()["text"] == "build failed"
    reply = send(fleet_dir, "coordinator", 'call notify {"channel": "ops-mail", "text": "build failed"}')
    assert "notify returned: sent to ops-mail" in reply
    wait_for(lambda: bool(smtp.mails), "the mail", deadline_s=60)
    ((envelope, mail),) = smtp.mails
    assert envelope.rcpt_tos == ["ops@example.test"] and mail["From"] == "fleet@example.test"
    assert "build failed" in str(mail.get_payload())
    assert [call["source"] for call in tool_calls(fleet_dir, "coordinator", "notify")] == ["host", "host"]


def test_a_notify_needing_approval_is_refused_directly_and_runs_once_approved(
    fleet_dir: Path, receiver: HttpReceiver
) -> None:
    paths = StatePaths.for_fleet_file(fleet_dir / "fleet.yaml")
    direct = httpx.post(
        f"{endpoint_of(fleet_dir).url}/agent/v1/tools/call",
        json={"name": "notify", "arguments": {"channel": "ops-hook", "text": "sneaky"}},
        headers={"authorization": f"Bearer {paths.token_file('careful').read_text().strip()}"},
        timeout=60,
    )
    assert direct.status_code == 403, direct.text
    assert "notify needs an operator's approval" in direct.json()["message"]
    noticed = run_flotilla(fleet_dir, "events", "--agent", "careful", "--json", "-n", "100", env=env())
    refusals = [event for event in json.loads(noticed.stdout) if event["type"] == "approval.refused"]
    assert [event["data"]["tool"] for event in refusals] == ["notify"]
    directive = 'call notify {"channel": "ops-hook", "text": "deploy at noon"}'
    waiting = start_flotilla(fleet_dir, "send", "careful", directive, env=env())
    pending: list[dict[str, Any]] = []

    def asked() -> bool:
        out = run_flotilla(fleet_dir, "approvals", "--json", env=env()).stdout
        pending[:] = [i for i in json.loads(out) if i["agent"] == "careful" and i["state"] == "pending"]
        return len(pending) == 1

    wait_for(asked, "the approval item of careful", deadline_s=120)
    assert pending[0]["tool"] == "notify"
    assert not [got for got in receiver.on("/notify") if got.json()["agent"] == "careful"]
    assert run_flotilla(fleet_dir, "approve", pending[0]["id"], env=env()).returncode == 0
    out, err = waiting.communicate(timeout=180)
    assert waiting.returncode == 0, err
    assert "notify returned: sent to ops-hook" in out
    wait_for(
        lambda: any(got.json()["agent"] == "careful" for got in receiver.on("/notify")),
        "careful's notification",
        deadline_s=60,
    )
    sent = [got.json()["text"] for got in receiver.on("/notify") if got.json()["agent"] == "careful"]
    assert sent == ["deploy at noon"]
    (recorded,) = tool_calls(fleet_dir, "careful", "notify")
    assert recorded["approval"] == "approved" and recorded["ok"] is True and recorded["source"] == "host"

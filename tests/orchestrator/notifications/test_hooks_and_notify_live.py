"""Hooks and notifications on a running fleet (process runtime, the `test` model), against local
servers only: an HTTP receiver and aiosmtpd on 127.0.0.1, ephemeral ports.

A signed request to POST /hooks/NAME becomes an item the agent answers; bad signatures, replays,
oversize payloads and floods are refused; `call notify {...}` reaches the webhook receiver and the
SMTP server; a channel that keeps failing is retried and ends as an alert; a heartbeat rule
`notify CHANNEL: TEXT` is sent without a model turn; no secret value reaches events or records.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.hooks.signatures import github_signature, hmac_signature
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla, wait_for
from tests.orchestrator.notifications.servers import HttpReceiver, SmtpSink

HOOK_SECRET = f"hook-{secrets.token_hex(16)}"
OPS_TOKEN = f"ops-{secrets.token_hex(16)}"

FLEET = """\
version: 1
fleet: hooksnotify
secrets:
  hook_secret: {{env: HOOK_SECRET}}
  ops_token: {{env: OPS_TOKEN}}
channels:
  ops-hook: {{type: webhook, url: "{receiver}/notify", headers: {{Authorization: "Bearer {{{{secret:ops_token}}}}"}}}}
  ops-mail: {{type: email, smtp: {{host: 127.0.0.1, port: {smtp_port}}}, from: "fleet@example.test", to: ["ops@example.test"]}}
  broken: {{type: webhook, url: "{receiver}/broken?key={{{{secret:ops_token}}}}", attempts: 2}}
  elsewhere: {{type: webhook, url: "{receiver}/elsewhere"}}
hooks:
  github: {{agent: coordinator, secret: hook_secret, signature: github, max_payload: 4k}}
  ci: {{agent: coordinator, secret: hook_secret, signature: hmac, replay_window: 2m}}
  tiny: {{agent: coordinator, secret: hook_secret, signature: github, max_per_minute: 2}}
alerts:
  webhooks:
    pager: {{url: "{receiver}/alerts"}}
  rules:
    - {{when: notification_failed, to: [pager]}}
agents:
  coordinator:
    model: test
    channels: [ops-hook, ops-mail, broken]
  watcher:
    model: test
    channels: [ops-hook]
    heartbeat:
      every: 2s
      rules:
        - "every 1h: notify ops-hook: standup in ten minutes"
"""


@pytest.fixture(scope="module")
def receiver() -> Iterator[HttpReceiver]:
    running = HttpReceiver(statuses={"/broken": 500}).start()
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


def operator_env() -> dict[str, str]:
    return {**os.environ, "HOOK_SECRET": HOOK_SECRET, "OPS_TOKEN": OPS_TOKEN}


@pytest.fixture(scope="module")
def fleet_dir(
    tmp_path_factory: pytest.TempPathFactory, receiver: HttpReceiver, smtp: SmtpSink
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("hooks-fleet")
    (folder / "fleet.yaml").write_text(FLEET.format(receiver=receiver.url, smtp_port=smtp.port))
    try:
        started = run_flotilla(
            folder, "up", "-d", "--runtime", "process", "--port", str(free_port()), env=operator_env()
        )
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v", env=operator_env())


def endpoint_url(folder: Path) -> str:
    endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
    assert endpoint is not None
    return endpoint.url


def operator_get(folder: Path, path: str) -> Any:
    endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
    assert endpoint is not None
    response = httpx.get(
        f"{endpoint.url}{path}", headers={"authorization": f"Bearer {endpoint.token}"}, timeout=90
    )
    assert response.status_code == 200, response.text
    return response.json()


def post_github(
    folder: Path,
    hook: str,
    payload: dict[str, Any],
    *,
    secret: str = HOOK_SECRET,
    delivery: str | None = None,
) -> httpx.Response:
    body = json.dumps(payload).encode()
    headers = {
        "content-type": "application/json",
        "x-github-event": "pull_request",
        "x-github-delivery": delivery or secrets.token_hex(8),
        "x-hub-signature-256": github_signature(secret, body),
    }
    return httpx.post(f"{endpoint_url(folder)}/hooks/{hook}", content=body, headers=headers, timeout=30)


def events(folder: Path, kind: str) -> list[dict[str, Any]]:
    out = run_flotilla(folder, "events", "--json", "-n", "1000").stdout
    return [event for event in json.loads(out) if event["type"] == kind]


def send(folder: Path, agent: str, text: str) -> str:
    result = run_flotilla(folder, "send", agent, text, timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def pull_request(number: int) -> dict[str, Any]:
    return {
        "action": "opened",
        "number": number,
        "repository": {"full_name": "harbour/quay"},
        "sender": {"login": "ana"},
        "pull_request": {"title": f"Fix the tide table ({number})"},
    }


def test_a_signed_github_hook_becomes_an_item_the_agent_answers(fleet_dir: Path) -> None:
    response = post_github(fleet_dir, "github", pull_request(1))
    assert response.status_code == 202, response.text
    accepted = response.json()
    assert accepted["agent"] == "coordinator"
    status = operator_get(fleet_dir, f"/api/v1/items/{accepted['item_id']}?wait=60")
    assert status["state"] == "done", status
    assert "Hook github: GitHub event pull_request" in status["result"]["text"]
    (item,) = [
        i
        for i in operator_get(fleet_dir, "/api/v1/agents/coordinator/inbox?all=true")
        if i["id"] == accepted["item_id"]
    ]
    assert (item["kind"], item["sender"], item["principal"]) == ("hook", "hook:github", "hook:github")
    assert "repository: harbour/quay" in item["text"] and '"title": "Fix the tide table (1)"' in item["text"]
    (received,) = [
        e for e in events(fleet_dir, "hook.received") if e["data"]["item_id"] == accepted["item_id"]
    ]
    assert received["data"]["event"] == "pull_request"


def test_a_bad_signature_is_refused_counted_and_reported_once_per_episode(fleet_dir: Path) -> None:
    before = len(events(fleet_dir, "hook.signature_refused"))
    for number in (2, 3, 4):
        refused = post_github(fleet_dir, "github", pull_request(number), secret="not-the-secret")
        assert refused.status_code == 401, refused.text
        assert refused.json()["error"] == "bad_signature"
    unsigned = httpx.post(f"{endpoint_url(fleet_dir)}/hooks/github", json=pull_request(5), timeout=30)
    assert unsigned.status_code == 401
    assert len(events(fleet_dir, "hook.signature_refused")) == before + 1
    metrics = httpx.get(
        f"{endpoint_url(fleet_dir)}/metrics",
        headers={"authorization": f"Bearer {read_token(fleet_dir)}"},
        timeout=30,
    ).text
    assert 'flotilla_hook_requests_total{hook="github",outcome="bad_signature"} 4.0' in metrics
    inbox = operator_get(fleet_dir, "/api/v1/agents/coordinator/inbox?all=true")
    assert not any("Fix the tide table (2)" in item["text"] for item in inbox)


def read_token(folder: Path) -> str:
    endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
    assert endpoint is not None
    return endpoint.token


def test_a_replayed_github_delivery_is_refused(fleet_dir: Path) -> None:
    first = post_github(fleet_dir, "github", pull_request(6), delivery="delivery-6")
    assert first.status_code == 202, first.text
    again = post_github(fleet_dir, "github", pull_request(6), delivery="delivery-6")
    assert again.status_code == 409 and again.json()["error"] == "replayed"
    # The same signed body under a new delivery id is the same request replayed.
    renamed = post_github(fleet_dir, "github", pull_request(6), delivery="delivery-6-renamed")
    assert renamed.status_code == 409
    assert first.json()["item_id"] in renamed.json()["message"]


def test_a_generic_hmac_hook_checks_its_timestamp_and_refuses_replays(fleet_dir: Path) -> None:
    body = json.dumps({"job": "nightly", "status": "failed"}).encode()
    url = f"{endpoint_url(fleet_dir)}/hooks/ci"

    def signed(stamp: int) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "x-flotilla-timestamp": str(stamp),
            "x-flotilla-signature": "sha256=" + hmac_signature(HOOK_SECRET, stamp, body),
        }

    now = int(time.time())
    accepted = httpx.post(url, content=body, headers=signed(now), timeout=30)
    assert accepted.status_code == 202, accepted.text
    replayed = httpx.post(url, content=body, headers=signed(now), timeout=30)
    assert replayed.status_code == 409
    stale = httpx.post(url, content=body, headers=signed(now - 600), timeout=30)
    assert stale.status_code == 401 and stale.json()["error"] == "stale"


def test_an_oversize_payload_is_refused_before_anything_else(fleet_dir: Path) -> None:
    big = pull_request(7) | {"padding": "x" * 5000}
    refused = post_github(fleet_dir, "github", big)
    assert refused.status_code == 413, refused.text
    assert "max_payload" in refused.json()["message"]


def test_a_flood_on_one_hook_is_refused_with_retry_after(fleet_dir: Path) -> None:
    answers = [post_github(fleet_dir, "tiny", pull_request(100 + n)) for n in range(3)]
    assert [a.status_code for a in answers] == [202, 202, 429]
    assert 1 <= int(answers[2].headers["retry-after"]) <= 60
    assert post_github(fleet_dir, "github", pull_request(110)).status_code == 202


def test_notify_reaches_the_webhook_with_its_secret_filled_in_at_send_time(
    fleet_dir: Path, receiver: HttpReceiver
) -> None:
    reply = send(fleet_dir, "coordinator", 'call notify {"channel": "ops-hook", "text": "build failed"}')
    assert "notify returned: sent to ops-hook" in reply
    (got,) = [r for r in receiver.on("/notify") if r.json()["agent"] == "coordinator"]
    assert got.json()["text"] == "build failed" and got.json()["fleet"] == "hooksnotify"
    assert got.headers["authorization"] == f"Bearer {OPS_TOKEN}"
    runs = json.loads(run_flotilla(fleet_dir, "runs", "coordinator", "--kind", "notify", "--json").stdout)
    assert any(r["trigger"] == "tool" and r["outcome"] == "sent" for r in runs)
    assert events(fleet_dir, "notification.sent")
    inbox = operator_get(fleet_dir, "/api/v1/agents/coordinator/inbox?all=true")
    assert {(i["kind"], i["principal"]) for i in inbox} >= {
        ("operator_message", "operator"),
        ("hook", "hook:github"),
    }


def test_an_agent_cannot_have_a_secret_filled_into_its_text(fleet_dir: Path, receiver: HttpReceiver) -> None:
    send(fleet_dir, "coordinator", 'call notify {"channel": "ops-hook", "text": "leak {{secret:ops_token}}"}')
    texts = [r.json()["text"] for r in receiver.on("/notify")]
    # The agent's own redaction may mask the handle further; what matters is that nothing filled it.
    assert any(text.startswith("leak {{secret:") for text in texts)
    assert not any(OPS_TOKEN in text for text in texts)


def test_notify_by_email_reaches_the_smtp_server(fleet_dir: Path, smtp: SmtpSink) -> None:
    reply = send(
        fleet_dir,
        "coordinator",
        'call notify {"channel": "ops-mail", "text": "nightly build failed\\nsee the log"}',
    )
    assert "notify returned: sent to ops-mail" in reply
    wait_for(lambda: bool(smtp.mails), "the mail")
    envelope, mail = smtp.mails[-1]
    assert envelope.mail_from == "fleet@example.test" and envelope.rcpt_tos == ["ops@example.test"]
    assert mail["Subject"] == "[hooksnotify] coordinator: nightly build failed"
    assert "see the log" in mail.get_payload()


def test_a_channel_not_listed_for_the_agent_is_refused(fleet_dir: Path, receiver: HttpReceiver) -> None:
    reply = send(fleet_dir, "coordinator", 'call notify {"channel": "elsewhere", "text": "hi"}')
    assert "'elsewhere' is not one of" in reply  # the schema the agent was offered lists its channels
    # An agent that ignores its catalog is refused by the orchestrator.
    paths = StatePaths.for_fleet_file(fleet_dir / "fleet.yaml")
    direct = httpx.post(
        f"{endpoint_url(fleet_dir)}/agent/v1/tools/call",
        json={"name": "notify", "arguments": {"channel": "elsewhere", "text": "hi"}},
        headers={"authorization": f"Bearer {paths.token_file('coordinator').read_text().strip()}"},
        timeout=30,
    )
    assert direct.status_code == 403
    assert "channel 'elsewhere' is not listed for agent coordinator" in direct.json()["message"]
    assert receiver.on("/elsewhere") == []


def test_a_failing_channel_is_retried_then_alerted(fleet_dir: Path, receiver: HttpReceiver) -> None:
    reply = send(fleet_dir, "coordinator", 'call notify {"channel": "broken", "text": "disk full"}')
    assert "not delivered yet" in reply and "HTTP 500" in reply
    wait_for(lambda: len(receiver.on("/broken")) >= 2, "the retry", deadline_s=30)
    wait_for(lambda: bool(receiver.on("/alerts")), "the alert", deadline_s=30)
    alert = receiver.on("/alerts")[-1].json()
    assert (
        alert["alert"] == "notification_failed"
        and "channel broken failed after 2 attempts" in alert["summary"]
    )
    (failed,) = events(fleet_dir, "notification.failed")
    assert failed["data"]["attempts"] == 2
    runs = json.loads(run_flotilla(fleet_dir, "runs", "coordinator", "--kind", "notify", "--json").stdout)
    assert any(r["outcome"] == "failed" and "HTTP 500" in r["detail"] for r in runs)
    listed = run_flotilla(fleet_dir, "notifications", "coordinator")
    assert listed.returncode == 0, listed.stderr
    (line,) = [line for line in listed.stdout.splitlines() if " broken " in line]
    assert "failed" in line and "x2" in line and "{{secret:ops_token}}" in line


def test_a_heartbeat_rule_notifies_without_waking_the_model(fleet_dir: Path, receiver: HttpReceiver) -> None:
    wait_for(
        lambda: any(r.json().get("agent") == "watcher" for r in receiver.on("/notify")),
        "the rule's notification",
    )
    (got,) = [r.json() for r in receiver.on("/notify") if r.json()["agent"] == "watcher"]
    assert got["text"] == "standup in ten minutes"
    runs = json.loads(run_flotilla(fleet_dir, "runs", "watcher", "--json", "-n", "100").stdout)
    assert any(r["kind"] == "notify" and r["trigger"] == "rule" and r["outcome"] == "sent" for r in runs)
    assert not any(r["kind"] == "turn" for r in runs)
    assert any(r["kind"] == "tick" and "notify ops-hook: queued" in r["detail"] for r in runs)


def test_no_secret_value_reaches_events_records_or_the_state_database(
    fleet_dir: Path, receiver: HttpReceiver
) -> None:
    if not receiver.on("/broken"):  # run alone: make the failing channel quote its URL
        send(fleet_dir, "coordinator", 'call notify {"channel": "broken", "text": "disk full"}')
    wait_for(lambda: bool(receiver.on("/alerts")), "the failing channel's alert", deadline_s=40)
    dump = run_flotilla(fleet_dir, "events", "--json", "-n", "1000").stdout
    dump += run_flotilla(fleet_dir, "runs", "--json", "-n", "500").stdout
    assert "{{secret:ops_token}}" in dump  # the failing channel's URL, redacted to its handle
    database = StatePaths.for_fleet_file(fleet_dir / "fleet.yaml").db
    with contextlib.closing(sqlite3.connect(database)) as conn:
        rows = [
            str(row)
            for table in ("events", "runs", "notifications", "inbox", "alerts")
            for row in conn.execute(f"SELECT * FROM {table}")
        ]
    for value in (OPS_TOKEN, HOOK_SECRET):
        assert value not in dump
        assert not any(value in row for row in rows)

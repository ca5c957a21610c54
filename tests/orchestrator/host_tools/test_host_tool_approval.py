"""`tools.rules` holds for every host tool (notify, exec, http_request): a call sent straight to the
orchestrator's tool route, as code in the agent's container can, is refused with 403 until an
approved item of that agent names that very call, and then runs. A rule on a host tool the
agent is not given is a warning of `flotilla validate`."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from agent_runtime.protocol import ApprovalRequest, approval_key
from orchestrator.api.app import create_app
from orchestrator.approvals import ApprovalStore
from orchestrator.cli.main import cli
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.cli import wait_for
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import attach_subsystems, core_services, fleet_manager
from tests.orchestrator.notifications.servers import HttpReceiver

FLEET = """\
version: 1
fleet: hostapproval
channels:
  ops-hook: {{type: webhook, url: "{receiver}/notify"}}
agents:
  alpha:
    role: reports
    channels: [ops-hook]
    tools:
      http: {{allow: ["{receiver}/"], allow_private: true}}
      exec: {{timeout_s: 10}}
      rules:
        notify: {{approval: required}}
        exec: {{approval: required}}
        http_request: {{approval: required}}
"""


@pytest.fixture
def receiver() -> Iterator[HttpReceiver]:
    running = HttpReceiver().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def services(tmp_path: Path, receiver: HttpReceiver) -> Iterator[Services]:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(textwrap.dedent(FLEET.format(receiver=receiver.url)))
    core = core_services(load_fleet(fleet_file), FakeBackend())
    built = attach_subsystems(core, fleet_manager(core))
    yield built
    built.db.close()


@pytest.fixture
def call(services: Services) -> Iterator[Any]:
    token = services.tokens.mint("alpha")
    with serve_app(create_app(services)) as url:

        def post(name: str, arguments: dict[str, Any], item_id: str) -> httpx.Response:
            return httpx.post(
                f"{url}/agent/v1/tools/call",
                json={"name": name, "arguments": arguments, "item_id": item_id},
                headers={"authorization": f"Bearer {token}"},
                timeout=30,
            )

        yield post


def approve(services: Services, tool: str, arguments: dict[str, Any], item_id: str) -> None:
    store = ApprovalStore(services.db, services.events)
    asked = store.request(
        "alpha",
        ApprovalRequest(
            key=approval_key(item_id, tool, arguments),
            tool=tool,
            arguments=arguments,
            item_id=item_id,
            timeout_s=60,
        ),
    )
    store.decide(asked.id, "approved")


def test_the_rules_name_every_host_tool(services: Services) -> None:
    required = services.fleet.config.agents["alpha"].tools.approval_required()
    assert {"notify", "exec", "http_request"} <= set(required)


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("notify", {"channel": "ops-hook", "text": "build failed"}),
        ("exec", {"command": "echo hi"}),
        ("http_request", {"method": "GET", "url": "http://127.0.0.1:9/"}),
    ],
)
def test_a_host_tool_call_without_approval_is_refused(
    call: Any, receiver: HttpReceiver, tool: str, arguments: dict[str, Any]
) -> None:
    refused = call(tool, arguments, "item-1")
    assert refused.status_code == 403, refused.text
    assert f"{tool} needs an operator's approval for this call" in refused.json()["message"]
    assert receiver.received == []


def test_an_approved_notify_is_sent_and_only_that_call_is_approved(
    services: Services, call: Any, receiver: HttpReceiver
) -> None:
    arguments = {"channel": "ops-hook", "text": "build failed"}
    assert call("notify", arguments, "item-2").status_code == 403
    approve(services, "notify", arguments, "item-2")
    sent = call("notify", arguments, "item-2")
    assert sent.status_code == 200 and sent.json()["ok"] is True, sent.text
    wait_for(lambda: bool(receiver.on("/notify")), "the notification", deadline_s=30)
    assert receiver.on("/notify")[0].json()["text"] == "build failed"
    other = call("notify", {"channel": "ops-hook", "text": "something else"}, "item-2")
    assert other.status_code == 403


def test_validate_warns_of_a_rule_on_a_host_tool_the_agent_lacks(tmp_path: Path) -> None:
    fleet_file = tmp_path / "fleet.yaml"
    fleet_file.write_text(
        textwrap.dedent(
            """\
            version: 1
            fleet: lacking
            agents:
              beta:
                role: quiet
                tools:
                  rules: {notify: {approval: required}, exec: {approval: required}}
            """
        )
    )
    result = CliRunner().invoke(cli, ["validate", "-f", str(fleet_file)])
    assert result.exit_code == 0, result.output
    assert (
        "agents.beta.tools.rules.notify: the rule on notify has no effect: agent beta has no notify "
        "tool (declare agents.beta.channels to give it one)"
    ) in result.output
    assert "agents.beta.tools.rules.exec: the rule on exec has no effect" in result.output

"""An agent runtime of the previous release still works against this orchestrator: what it sends
(tests/fixtures/agent-wire/previous-release.json, recorded with scripts/record_agent_wire.py from
that release) is replayed over real HTTP and a real WebSocket, and every reply must fit the JSON
Schema of that release's wire models, which refuse unknown fields."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from websockets.sync.client import ClientConnection, connect

from agent_runtime.protocol import ItemKind, WorkResult
from agent_runtime.transport.channel import channel_url
from orchestrator.api.app import create_app
from orchestrator.services import Services
from orchestrator.testing.fake_fleet import fake_fleet_services
from orchestrator.testing.server import serve_app

RECORDING = Path(__file__).resolve().parents[2] / "fixtures" / "agent-wire" / "previous-release.json"
FLEET = """\
version: 1
fleet: wire
agents:
  alpha:
    role: asks
    talks_to: [beta]
  beta:
    role: greets
    interface: greet.md
"""
GREET = """\
---
operations:
  - name: greet
    input:
      type: object
      properties: {who: {type: string}}
      required: [who]
    output:
      type: object
      properties: {greeting: {type: string}}
      required: [greeting]
---
I greet.
"""


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    recording: dict[str, Any] = json.loads(RECORDING.read_text())
    return recording


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    (tmp_path / "greet.md").write_text(GREET)
    with fake_fleet_services(tmp_path, FLEET) as built:
        yield built


@pytest.fixture
def base_url(services: Services) -> Iterator[str]:
    with serve_app(create_app(services)) as url:
        yield url


class OldAgent:
    """The previous release's requests, sent as recorded; replies checked against its models."""

    def __init__(self, recorded: dict[str, Any], services: Services, base_url: str, name: str) -> None:
        self.recorded = recorded
        self.base_url = base_url
        self.token = services.tokens.mint(name)
        self._channel: ClientConnection | None = None

    def fits(self, reply: str, body: Any) -> None:
        schema = self.recorded["replies"][reply]
        jsonschema.validate(body, schema, cls=jsonschema.Draft202012Validator)

    def http(self, name: str) -> httpx.Response:
        request = self.recorded["http"][name]
        headers = {"Authorization": f"Bearer {self.token}"}
        if request["body"] is not None:
            headers["Content-Type"] = "application/json"
        return httpx.request(
            request["method"],
            self.base_url + request["path"],
            content=request["body"],
            headers=headers,
            timeout=10,
        )

    @property
    def channel(self) -> ClientConnection:
        if self._channel is None:
            opened = connect(
                channel_url(self.base_url),
                additional_headers={"Authorization": f"Bearer {self.token}"},
                user_agent_header="flotilla-agent",
                compression=None,
                proxy=None,
            )
            # Held past this block like the runtime's own channel: entered, closed by `close`.
            self._channel = opened.__enter__()
        return self._channel

    def send(self, name: str, item: str = "") -> int:
        text: str = self.recorded["frames"][name].replace("{item}", item)
        self.channel.send(text)
        frame_id: int = json.loads(text)["id"]
        return frame_id

    def reply(self, frame_id: int) -> tuple[int, Any]:
        """The reply to this frame; the orchestrator's own requests met on the way must fit too."""
        while True:
            message = json.loads(self.channel.recv(timeout=15))
            if "op" in message:
                self.fits("AgentRequest", message)
                continue
            if message["id"] == frame_id:
                return message["status"], message["body"]

    def call(self, name: str, item: str = "") -> tuple[int, Any]:
        return self.reply(self.send(name, item))

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()


@pytest.fixture
def agents(recorded: dict[str, Any], services: Services, base_url: str) -> Iterator[dict[str, OldAgent]]:
    built = {name: OldAgent(recorded, services, base_url, name) for name in ("alpha", "beta")}
    yield built
    for agent in built.values():
        agent.close()


def test_the_recording_is_of_this_wire_protocol(recorded: dict[str, Any]) -> None:
    assert recorded["protocol"] == 2
    assert set(recorded["frames"]) >= {"config", "checkin", "next", "progress", "done", "ask", "tell"}


def test_a_previous_release_agent_reports_in_over_plain_http(
    agents: dict[str, OldAgent], services: Services
) -> None:
    beta = agents["beta"]
    config = beta.http("boot_config")
    assert config.status_code == 200
    beta.fits("AgentRuntimeConfig", config.json())
    checkin = beta.http("boot_checkin")
    assert checkin.status_code == 200
    beta.fits("CheckInReply", checkin.json())
    sighting = services.health.last("beta")
    assert sighting is not None and sighting.checkin.state == "starting"


def test_a_previous_release_agent_works_its_inbox_over_the_channel(
    agents: dict[str, OldAgent], services: Services
) -> None:
    beta = agents["beta"]
    for frame, reply in (("config", "AgentRuntimeConfig"), ("config_reload", "AgentRuntimeConfig")):
        status, body = beta.call(frame)
        assert status == 200
        beta.fits(reply, body)
    status, body = beta.call("checkin")
    assert status == 200
    beta.fits("CheckInReply", body)
    item = services.inbox.submit("beta", ItemKind.OPERATOR_MESSAGE, "operator", "hi")
    status, body = beta.call("next")
    assert status == 200 and body["id"] == item.id
    beta.fits("InboxItem", body)
    assert beta.call("progress", item.id) == (204, None)
    assert beta.call("done", item.id) == (204, None)
    assert services.inbox.result(item.id) == WorkResult(ok=True, text="hello")
    status, body = beta.call("done", "not-an-item")
    assert status == 404
    beta.fits("ErrorBody", body)


def test_a_previous_release_agent_writes_its_workspace_and_forgets(agents: dict[str, OldAgent]) -> None:
    beta = agents["beta"]
    status, body = beta.call("workspace_write")
    assert status == 200
    beta.fits("WorkspaceWriteResult", body)
    status, body = beta.call("forgotten")
    assert status == 200
    beta.fits("ForgottenCopies", body)


def test_previous_release_agents_ask_and_tell_each_other(agents: dict[str, OldAgent]) -> None:
    alpha, beta = agents["alpha"], agents["beta"]
    asked = alpha.send("ask")
    answer: dict[str, Any] = {}
    waiting = threading.Thread(target=lambda: answer.update(reply=alpha.reply(asked)))
    waiting.start()
    status, item = beta.call("next")
    assert status == 200 and item["kind"] == "peer_ask"
    beta.fits("InboxItem", item)
    assert beta.call("answer_ask", item["id"]) == (204, None)
    waiting.join(20)
    status, result = answer["reply"]
    assert status == 200
    alpha.fits("AskResult", result)
    assert result["ok"] and result["output"] == {"greeting": "hi alpha"}
    status, told = alpha.call("tell")
    assert status == 200
    alpha.fits("TellResult", told)


def test_the_http_calls_a_previous_release_agent_still_makes(agents: dict[str, OldAgent]) -> None:
    alpha = agents["alpha"]
    assert alpha.http("runs").status_code == 204
    assert alpha.http("events").status_code == 204
    peers = alpha.http("peers")
    assert peers.status_code == 200
    alpha.fits("PeerList", peers.json())
    assert [peer["name"] for peer in peers.json()] == ["beta"]
    tools = alpha.http("tools")
    assert tools.status_code == 200
    alpha.fits("OrchestratorTools", tools.json())

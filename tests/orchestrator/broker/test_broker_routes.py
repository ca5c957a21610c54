"""The broker's routes over real HTTP (uvicorn on 127.0.0.1), driven by the agent-side peer tools."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from agent_runtime.protocol import AskRequest, InboxItem, ItemKind, WorkResult
from agent_runtime.tools.peers import PeerClient, peer_tools
from agent_runtime.tools.registry import ToolRegistry
from orchestrator.api.app import create_app
from orchestrator.services import Services
from orchestrator.testing.server import serve_app

Responder = Callable[[InboxItem], WorkResult]


@dataclass
class Fleet:
    url: str
    tokens: dict[str, str]
    operator: httpx.Client
    clients: list[PeerClient] = field(default_factory=list)

    def tools(self, agent: str, current_item: Callable[[], str | None] = lambda: None) -> ToolRegistry:
        return ToolRegistry(peer_tools(self.client(agent), current_item))

    def client(self, agent: str) -> PeerClient:
        client = PeerClient(self.url, self.tokens[agent])
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.operator.close()


class SimulatedAgent:
    """An agent without a model: long-polls its inbox over HTTP and answers with `respond`."""

    def __init__(self, url: str, token: str, respond: Responder) -> None:
        self._http = httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=10)
        self._respond = respond
        self._stop = threading.Event()
        self.handled: list[InboxItem] = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> SimulatedAgent:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._http.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            response = self._http.get("/agent/v1/inbox/next", params={"wait": 0.2})
            if response.status_code == 204:
                continue
            item = InboxItem.model_validate_json(response.content)
            self.handled.append(item)
            result = self._respond(item)
            done = self._http.post(f"/agent/v1/inbox/{item.id}/done", json=result.model_dump(mode="json"))
            assert done.status_code == 204, done.text


def summarize(item: InboxItem) -> WorkResult:
    assert item.input is not None
    return WorkResult(output={"summary": item.input["text"].upper()})


@pytest.fixture
def fleet(services: Services) -> Iterator[Fleet]:
    tokens = {name: services.tokens.mint(name) for name in services.fleet.config.agents}
    with serve_app(create_app(services)) as url:
        operator = httpx.Client(
            base_url=url, headers={"authorization": f"Bearer {services.operator_token}"}, timeout=10
        )
        fleet = Fleet(url, tokens, operator)
        yield fleet
        fleet.close()


def test_list_peers_and_read_interface(fleet: Fleet) -> None:
    tools = fleet.tools("alpha")

    listed = tools.dispatch("list_peers", {})
    assert listed.ok
    assert "**beta** (summarizer)" in listed.output
    assert "`beta.summarize(text: string)`: Summarize a text." in listed.output
    assert "**gamma**" in listed.output

    interface = tools.dispatch("read_interface", {"agent": "beta"})
    assert interface.ok
    assert '"required": ["text"]' in interface.output
    assert "I summarize texts." in interface.output

    stranger = tools.dispatch("read_interface", {"agent": "loner"})
    assert not stranger.ok
    assert "not one of your peers" in stranger.output


def test_ask_agent_round_trip_carries_the_current_item(fleet: Fleet, services: Services) -> None:
    # alpha is working on an operator message; its ask continues that chain.
    services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "ask beta")
    claimed = httpx.get(
        f"{fleet.url}/agent/v1/inbox/next",
        params={"wait": 1},
        headers={"authorization": f"Bearer {fleet.tokens['alpha']}"},
    )
    working_on = InboxItem.model_validate_json(claimed.content)

    with SimulatedAgent(fleet.url, fleet.tokens["beta"], summarize) as beta:
        tools = fleet.tools("alpha", lambda: working_on.id)
        outcome = tools.dispatch(
            "ask_agent", {"agent": "beta", "operation": "summarize", "input": {"text": "hi"}}
        )

    assert outcome.ok, outcome.output
    assert json.loads(outcome.output) == {"summary": "HI"}
    [item] = beta.handled
    assert item.sender == "alpha"
    assert (item.hop, item.trace) == (1, ["alpha"])
    message = services.broker.messages.get(item.id)
    assert message is not None
    assert message.parent_item == working_on.id


def test_invalid_input_is_an_error_for_the_model_and_nothing_is_delivered(fleet: Fleet) -> None:
    tools = fleet.tools("alpha")
    outcome = tools.dispatch("ask_agent", {"agent": "beta", "operation": "summarize", "input": {"text": 5}})

    assert not outcome.ok
    assert "invalid_input" in outcome.output
    assert "text: 5 is not of type 'string'" in outcome.output
    inbox = fleet.operator.get("/api/v1/agents/beta/inbox", params={"all": True})
    assert inbox.status_code == 200
    assert inbox.json() == []


def test_acl_denial_over_http(fleet: Fleet) -> None:
    outcome = fleet.tools("loner").dispatch("tell_agent", {"agent": "beta", "text": "hello"})
    assert not outcome.ok
    assert "acl_denied" in outcome.output


def test_tell_lands_in_the_inbox_the_operator_can_read(fleet: Fleet) -> None:
    outcome = fleet.tools("alpha").dispatch("tell_agent", {"agent": "beta", "text": "build is green"})
    assert outcome.ok
    assert outcome.output.startswith("delivered to beta")

    items = fleet.operator.get("/api/v1/agents/beta/inbox").json()
    assert [(item["kind"], item["text"], item["sender"]) for item in items] == [
        ("peer_tell", "build is green", "alpha")
    ]
    assert fleet.operator.get("/api/v1/agents/nobody/inbox").status_code == 404


def test_trace_route_shows_the_chain(fleet: Fleet) -> None:
    with SimulatedAgent(fleet.url, fleet.tokens["beta"], summarize):
        result = fleet.client("alpha").ask(
            AskRequest(to="beta", operation="summarize", input={"text": "abc"}, timeout_s=10)
        )
    assert result.ok

    trace = fleet.operator.get(f"/api/v1/trace/{result.message_id}")
    assert trace.status_code == 200
    body = trace.json()
    assert body["path"] == ["alpha", "beta"]
    [message] = body["messages"]
    assert message["state"] == "answered"
    assert message["operation"] == "summarize"
    assert message["item_state"] == "done"
    missing = fleet.operator.get("/api/v1/trace/nope")
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"


def test_contracts_check_route(fleet: Fleet) -> None:
    response = fleet.operator.get("/api/v1/contracts/check")
    assert response.status_code == 200
    report = response.json()
    assert report["ok"] is True
    assert {a["agent"]: a["operations"] for a in report["agents"]}["beta"] == ["summarize"]


def test_routes_check_who_is_calling(fleet: Fleet) -> None:
    agent = {"authorization": f"Bearer {fleet.tokens['alpha']}"}
    ask_body = {"to": "beta", "operation": "summarize", "input": {"text": "x"}}

    assert fleet.operator.post("/agent/v1/ask", json=ask_body).status_code == 403
    assert httpx.get(f"{fleet.url}/api/v1/contracts/check", headers=agent).status_code == 403
    assert httpx.get(f"{fleet.url}/agent/v1/peers").status_code == 401
    too_long = httpx.post(f"{fleet.url}/agent/v1/ask", json={**ask_body, "timeout_s": 0}, headers=agent)
    assert too_long.status_code == 422
    assert "timeout_s" in too_long.json()["message"]
    unknown_field = httpx.post(f"{fleet.url}/agent/v1/ask", json={**ask_body, "speed": 1}, headers=agent)
    assert unknown_field.status_code == 422

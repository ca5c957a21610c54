"""The event feed: recent events as JSON and the live SSE stream over a real HTTP connection."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from orchestrator.api.operator.events import close_streams
from orchestrator.events import EventType
from orchestrator.services import Services
from orchestrator.testing.server import serve_app

READ_TIMEOUT_S = 20.0


class SseReader:
    """Reads an open text/event-stream response message by message."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.iter_lines()
        self.comments: list[str] = []

    def next_message(self) -> dict[str, str]:
        fields: dict[str, str] = {}
        for line in self._lines:
            if not line:
                if "data" in fields:
                    return fields
                continue
            if line.startswith(":"):
                self.comments.append(line[1:].strip())
                continue
            key, _, value = line.partition(":")
            fields[key] = value.removeprefix(" ")
        raise AssertionError("the stream ended")

    def next_event(self) -> dict[str, object]:
        message = self.next_message()
        event: dict[str, object] = json.loads(message["data"])
        assert message["id"] == str(event["seq"])
        return event

    def wait_comment(self, text: str) -> None:
        while text not in self.comments:
            line = next(self._lines)
            if line.startswith(":"):
                self.comments.append(line[1:].strip())


@pytest.fixture
def base_url(app: FastAPI) -> Iterator[str]:
    with serve_app(app) as url:
        yield url


def open_stream(
    base_url: str, services: Services, **params: object
) -> contextlib.AbstractContextManager[httpx.Response]:
    return httpx.stream(
        "GET",
        f"{base_url}/api/v1/events",
        params={k: str(v) for k, v in params.items()},
        headers={"authorization": f"Bearer {services.operator_token}"},
        timeout=httpx.Timeout(READ_TIMEOUT_S),
    )


def test_live_event_arrives_over_http(base_url: str, services: Services) -> None:
    with open_stream(base_url, services) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        reader = SseReader(response)
        reader.wait_comment("connected")
        published = services.events.publish(EventType.HEARTBEAT_RUN, agent="alpha", reason="inbox")
        event = reader.next_event()
    assert event["seq"] == published.seq
    assert event["type"] == "heartbeat.run"
    assert event["agent"] == "alpha"
    assert event["data"] == {"reason": "inbox"}


def test_after_replays_stored_events_then_goes_live(base_url: str, services: Services) -> None:
    first = services.events.publish(EventType.AGENT_STARTED, agent="alpha")
    second = services.events.publish(EventType.AGENT_STARTED, agent="beta")
    third = services.events.publish(EventType.MESSAGE_SENT, agent="alpha", to="beta")
    with open_stream(base_url, services, after=first.seq) as response:
        reader = SseReader(response)
        replayed = [reader.next_event()["seq"], reader.next_event()["seq"]]
        live = services.events.publish(EventType.BUDGET_WARNING, agent="beta", fraction=0.8)
        assert reader.next_event()["seq"] == live.seq
    assert replayed == [second.seq, third.seq]


def test_last_event_id_resumes_a_reconnecting_browser(base_url: str, services: Services) -> None:
    first = services.events.publish(EventType.AGENT_STARTED, agent="alpha")
    second = services.events.publish(EventType.AGENT_STOPPED, agent="alpha")
    with httpx.stream(
        "GET",
        f"{base_url}/api/v1/events",
        params={"after": 0},
        headers={"authorization": f"Bearer {services.operator_token}", "last-event-id": str(first.seq)},
        timeout=READ_TIMEOUT_S,
    ) as response:
        assert SseReader(response).next_event()["seq"] == second.seq


def test_agent_filter(base_url: str, services: Services) -> None:
    services.events.publish(EventType.AGENT_STARTED, agent="beta")
    wanted = services.events.publish(EventType.AGENT_STARTED, agent="alpha")
    with open_stream(base_url, services, agent="alpha", after=0) as response:
        reader = SseReader(response)
        assert reader.next_event()["seq"] == wanted.seq
        services.events.publish(EventType.HEARTBEAT_IDLE, agent="beta")
        live = services.events.publish(EventType.HEARTBEAT_IDLE, agent="alpha")
        event = reader.next_event()
    assert (event["seq"], event["agent"]) == (live.seq, "alpha")


def test_keep_alive_comments_while_idle(base_url: str, services: Services) -> None:
    with open_stream(base_url, services, heartbeat=0.2) as response:
        reader = SseReader(response)
        reader.wait_comment("keep-alive")
    assert "keep-alive" in reader.comments


def test_stream_needs_the_operator_token(base_url: str, services: Services) -> None:
    agent_token = services.tokens.mint("alpha")
    anonymous = httpx.get(f"{base_url}/api/v1/events", timeout=READ_TIMEOUT_S)
    as_agent = httpx.get(
        f"{base_url}/api/v1/events",
        headers={"authorization": f"Bearer {agent_token}"},
        timeout=READ_TIMEOUT_S,
    )
    assert anonymous.status_code == 401
    assert as_agent.status_code == 403


def test_recent_events(operator: TestClient, services: Services) -> None:
    services.events.publish(EventType.AGENT_STARTED, agent="alpha")
    services.events.publish(EventType.AGENT_STARTED, agent="beta")
    services.events.publish(EventType.COMPACTION_DONE, agent="alpha", tokens_before=900)
    every = operator.get("/api/v1/events/recent").json()
    assert [e["type"] for e in every] == ["agent.started", "agent.started", "compaction.done"]
    alpha = operator.get("/api/v1/events/recent", params={"agent": "alpha", "limit": 1}).json()
    assert len(alpha) == 1
    assert alpha[0]["data"] == {"tokens_before": 900}
    after = operator.get("/api/v1/events/recent", params={"after": every[1]["seq"]}).json()
    assert [e["seq"] for e in after] == [every[2]["seq"]]


def test_recent_events_auth(anonymous: TestClient, agent_client: TestClient) -> None:
    assert anonymous.get("/api/v1/events/recent").status_code == 401
    assert agent_client.get("/api/v1/events/recent").status_code == 403


def test_close_streams_ends_open_streams(app: FastAPI, services: Services) -> None:
    with serve_app(app) as url, open_stream(url, services) as response:
        reader = SseReader(response)
        reader.wait_comment("connected")
        close_streams(app)
        rest = list(reader._lines)
    assert all(not line or line.startswith(":") for line in rest)

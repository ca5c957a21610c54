"""A secret at the edges where text is cut, refused or sent elsewhere: an attacker controlling one
agent and an allowed server that echoes what it is sent, against sites on 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from agent_runtime.protocol import OrchestratorToolCall
from orchestrator.approvals import ApprovalStore
from orchestrator.config.secrets import SecretSource
from orchestrator.config.tools import ToolsConfig
from orchestrator.egress import HTTP_REFUSED, HttpRequestRefused, HttpRequestTool
from orchestrator.events import EventBus
from orchestrator.logging_setup import configure_logging, set_log_redaction
from orchestrator.secrets import SecretStore
from orchestrator.state.db import Database
from orchestrator.state.redaction import NO_REDACTION
from tests.orchestrator.egress.fake_site import FakeSite, start_site

TOKEN = "s3cr3t-DEMO-9f8e7d6c5b4a"
SYMBOLS = "p@ss/w0rd+key=42&more"


def pieces(value: str, size: int = 4) -> set[str]:
    """Every run of `size` characters of `value`."""
    return {value[start : start + size] for start in range(len(value) - size + 1)}


def leaked(value: str, text: str) -> list[str]:
    return sorted(piece for piece in pieces(value) if piece in text)


@pytest.fixture
def site() -> Iterator[FakeSite]:
    running = start_site()
    yield running
    running.close()


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    root, httpx_logger = logging.getLogger(), logging.getLogger("httpx")
    saved = (list(root.handlers), root.level, httpx_logger.level)
    configure_logging(level="debug", stream=stream)
    yield stream
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    httpx_logger.setLevel(saved[2])
    set_log_redaction(lambda: NO_REDACTION)


class Agent:
    """One agent's http_request tool with the fleet's secrets; `hosts` binds demo_token."""

    def __init__(self, tmp_path: Path, http: dict[str, Any], demo: dict[str, Any] | None = None) -> None:
        self.db = Database(tmp_path / "state.db")
        self.events = EventBus(self.db)
        self.secrets = SecretStore(
            {
                "demo_token": SecretSource(env="DEMO_TOKEN", **(demo or {})),
                "symbols": SecretSource(env="SYMBOLS"),
            },
            tmp_path,
            {"DEMO_TOKEN": TOKEN, "SYMBOLS": SYMBOLS},
        )
        self.secrets.load_all()
        set_log_redaction(lambda: self.secrets.redaction)
        self.tool = HttpRequestTool(
            "mallory",
            ToolsConfig.model_validate({"http": http}),
            secrets=self.secrets,
            approvals=ApprovalStore(self.db, self.events),
            events=self.events,
            db=self.db,
        )

    def call(self, arguments: dict[str, Any]) -> str:
        request = OrchestratorToolCall(name="http_request", arguments=arguments, item_id="item-1")
        result = asyncio.run(self.tool.call(request))
        return result.output

    def stored(self) -> str:
        return json.dumps([row["data"] for row in self.db.query("SELECT data FROM events")])


def policy(site: FakeSite, **more: Any) -> dict[str, Any]:
    return {
        "allow": [site.url("/")],
        "allow_private": True,
        "secrets": ["demo_token", "symbols"],
        **more,
    }


def test_a_cut_at_any_offset_inside_an_echoed_secret_shows_no_piece_of_it(
    tmp_path: Path, site: FakeSite
) -> None:
    agent = Agent(tmp_path, policy(site, max_response_bytes=1024))
    for offset in range(1, len(TOKEN)):
        answer = agent.call(
            {"url": site.url(f"/reflect?pad={1024 - offset}"), "headers": {"X-Key": "{{secret:demo_token}}"}}
        )
        assert "[body cut at 1024 bytes" in answer, answer[-200:]
        assert leaked(TOKEN, answer) == [], f"cut {offset} characters into the secret"
    assert leaked(TOKEN, agent.stored()) == []


def test_no_header_tells_the_length_of_an_echoed_secret(tmp_path: Path, site: FakeSite) -> None:
    agent = Agent(tmp_path, policy(site))
    answer = agent.call({"url": site.url("/reflect"), "headers": {"X-Key": "{{secret:demo_token}}"}})
    assert "{{secret:demo_token}} and the rest" in answer
    assert "content-length" not in answer.lower()
    binary = agent.call(
        {"url": site.url("/reflect?type=image/png"), "headers": {"X-Key": "{{secret:demo_token}}"}}
    )
    assert "[a body of image/png not shown]" in binary and "bytes" not in binary


@pytest.mark.parametrize(
    ("secret", "handle", "query"),
    [
        (TOKEN, "demo_token", "enc=base64"),
        (TOKEN, "demo_token", "enc=base64&lead=a"),
        (TOKEN, "demo_token", "enc=base64&lead=ab"),
        (TOKEN, "demo_token", "enc=hex"),
        (SYMBOLS, "symbols", "enc=url"),
        (SYMBOLS, "symbols", "enc=base64&lead=xy"),
    ],
)
def test_an_echo_in_a_common_encoding_is_redacted(
    tmp_path: Path, site: FakeSite, secret: str, handle: str, query: str
) -> None:
    agent = Agent(tmp_path, policy(site))
    answer = agent.call(
        {"url": site.url(f"/reflect?{query}"), "headers": {"X-Key": f"{{{{secret:{handle}}}}}"}}
    )
    raw = secret.encode()
    lead = query.split("lead=")[1].encode() if "lead=" in query else b""
    forms = [quote(secret, safe=""), raw.hex(), base64.b64encode(lead + raw).decode()[4:-4]]
    assert f"{{{{secret:{handle}}}}}" in answer
    for form in forms:
        assert form not in answer


def test_the_redirect_refusal_quotes_no_piece_of_a_secret(
    tmp_path: Path, site: FakeSite, log_stream: io.StringIO
) -> None:
    agent = Agent(tmp_path, policy(site, max_redirects=1))
    for pad in range(150, 330, 7):
        # The site sends the agent back to a URL that holds the secret, padded so that any cut
        # of the location falls inside it; past max_redirects the refusal quotes the location.
        inner = quote(site.url(f"/redirect?to=/data?{'q' * pad}"), safe="") + "{{secret:demo_token}}"
        with pytest.raises(HttpRequestRefused, match="max_redirects") as refused:
            agent.call({"url": site.url(f"/redirect?to={inner}")})
        assert leaked(TOKEN, str(refused.value)) == [], pad
        assert len(str(refused.value)) <= 300
    refusals = agent.db.query("SELECT data FROM events WHERE type = ?", (HTTP_REFUSED,))
    assert len(refusals) == len(range(150, 330, 7)) and leaked(TOKEN, agent.stored()) == []
    assert leaked(TOKEN, log_stream.getvalue()) == []
    assert "max_redirects" in log_stream.getvalue()


def test_a_secret_bound_to_hosts_goes_to_no_other(tmp_path: Path, site: FakeSite) -> None:
    other = start_site()
    try:
        http = policy(site)
        http["allow"] = [site.url("/"), f"http://localhost:{other.port}/"]
        http["allow"][1] = {"url": f"http://localhost:{other.port}/", "allow_private": True}
        agent = Agent(tmp_path, http, demo={"hosts": ["127.0.0.1"]})
        assert "HTTP 200" in agent.call(
            {"url": site.url("/echo"), "headers": {"X-Key": "{{secret:demo_token}}"}}
        )
        assert site.seen[-1].headers["x-key"] == TOKEN
        with pytest.raises(HttpRequestRefused, match=r"secrets\.demo_token\.hosts: .* not to localhost"):
            agent.call(
                {"url": f"http://localhost:{other.port}/echo", "headers": {"X-Key": "{{secret:demo_token}}"}}
            )
        # Only in a header unless the secret says otherwise: not in the URL, not in the body.
        with pytest.raises(HttpRequestRefused, match=r"may not be put in the URL .*places: header"):
            agent.call({"url": site.url("/echo?k={{secret:demo_token}}")})
        with pytest.raises(HttpRequestRefused, match=r"may not be put in the body"):
            agent.call({"method": "GET", "url": site.url("/echo"), "body": "{{secret:demo_token}}"})
        assert other.seen == []
    finally:
        other.close()


def test_a_redirect_cannot_carry_a_bound_secret_to_another_host(tmp_path: Path, site: FakeSite) -> None:
    other = start_site()
    try:
        http = policy(site)
        http["allow"] = [site.url("/"), {"url": f"http://localhost:{other.port}/", "allow_private": True}]
        agent = Agent(tmp_path, http, demo={"hosts": ["127.0.0.1"], "places": ["query"]})
        away = quote(f"http://localhost:{other.port}/data?k=", safe="")
        # The allowed site redirects to another allowed host with the value it was sent.
        with pytest.raises(HttpRequestRefused, match=r"secrets\.demo_token\.hosts"):
            agent.call({"url": site.url(f"/redirect?to={away}{{{{secret:demo_token}}}}")})
        assert len(site.seen) == 1 and other.seen == []
    finally:
        other.close()


def test_a_secret_without_hosts_still_goes_anywhere_allowed(tmp_path: Path, site: FakeSite) -> None:
    agent = Agent(tmp_path, policy(site))
    assert "HTTP 200" in agent.call({"url": site.url("/data?k={{secret:demo_token}}")})
    assert site.seen[-1].path == f"/data?k={TOKEN}"
    assert agent.db.query("SELECT data FROM events WHERE type = ?", (HTTP_REFUSED,)) == []

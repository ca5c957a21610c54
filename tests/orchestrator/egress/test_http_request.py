"""The http_request tool as a user and as an attacker, against local sites on 127.0.0.1 only."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest

from agent_runtime.protocol import (
    ApprovalRequest,
    OrchestratorToolCall,
    TranscriptMessage,
    TranscriptPage,
    approval_key,
)
from orchestrator.approvals import ApprovalStore
from orchestrator.cli.history import mark_line
from orchestrator.config.secrets import SecretSource
from orchestrator.config.tools import ToolsConfig
from orchestrator.egress import HTTP_REFUSED, HTTP_REQUESTED, HttpRequestRefused, HttpRequestTool
from orchestrator.egress.addresses import Resolver
from orchestrator.egress.metrics import HttpRequestCollector
from orchestrator.events import EventBus
from orchestrator.logging_setup import configure_logging
from orchestrator.running_agents.transcripts import build_transcript
from orchestrator.secrets import SecretStore
from orchestrator.state.db import Database
from tests.orchestrator.egress.fake_site import FakeSite, bomb, start_site

TOKEN = "tok-9f8e7d6c5b4a-value"


@pytest.fixture
def site() -> Iterator[FakeSite]:
    running = start_site()
    yield running
    running.close()


class Harness:
    def __init__(self, tmp_path: Path, http: dict[str, Any], resolver: Resolver | None = None) -> None:
        self.db = Database(tmp_path / "state.db")
        self.events = EventBus(self.db)
        self.approvals = ApprovalStore(self.db, self.events)
        self.secrets = SecretStore(
            {"demo_token": SecretSource(env="DEMO_TOKEN"), "other_token": SecretSource(env="OTHER")},
            tmp_path,
            {"DEMO_TOKEN": TOKEN, "OTHER": "other-secret-value"},
        )
        self.secrets.load_all()
        self.tools = ToolsConfig.model_validate({"http": http})
        extra: dict[str, Any] = {"resolver": resolver} if resolver is not None else {}
        self.tool = HttpRequestTool(
            "researcher",
            self.tools,
            secrets=self.secrets,
            approvals=self.approvals,
            events=self.events,
            db=self.db,
            **extra,
        )

    def call(self, arguments: dict[str, Any], item_id: str | None = "item-1") -> str:
        request = OrchestratorToolCall(name="http_request", arguments=arguments, item_id=item_id)
        result = asyncio.run(self.tool.call(request))
        return ("" if result.ok else "FAILED ") + result.output

    def events_of(self, kind: str) -> list[dict[str, Any]]:
        return [event.data for event in self.events.recent(100, "researcher") if event.type == kind]


def local_policy(site: FakeSite, **more: Any) -> dict[str, Any]:
    return {"allow": [site.url("/")], "allow_private": True, "secrets": ["demo_token"], **more}


def test_an_allowed_get_is_answered_and_recorded(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site))
    answer = harness.call({"method": "GET", "url": site.url("/data")})
    assert answer.startswith("HTTP 200 OK")
    assert "content-type: application/json" in answer
    assert '"items": [1, 2, 3]' in answer
    [event] = harness.events_of(HTTP_REQUESTED)
    assert event["method"] == "GET" and event["url"] == site.url("/data")
    assert event["status"] == 200 and event["host"] == "127.0.0.1" and event["bytes"] > 0
    assert event["duration_s"] >= 0


def test_the_secret_reaches_the_server_and_never_comes_back(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site))
    arguments = {"url": site.url("/echo"), "headers": {"Authorization": "Bearer {{secret:demo_token}}"}}
    answer = harness.call(arguments)
    assert site.seen[-1].headers["authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in answer
    assert "Bearer {{secret:demo_token}}" in answer  # the echo, redacted back to the handle
    stored = json.dumps([row["data"] for row in harness.db.query("SELECT data FROM events")])
    assert TOKEN not in stored


def test_a_secret_not_granted_to_the_agent_is_refused(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site))
    with pytest.raises(HttpRequestRefused, match=r"tools.http.secrets: secret 'other_token' is not granted"):
        harness.call({"url": site.url("/echo"), "headers": {"X-Key": "{{secret:other_token}}"}})
    assert site.seen == []


def test_a_url_outside_the_policy_is_refused_naming_the_rule(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, {"allow": [site.url("/api/")], "allow_private": True})
    with pytest.raises(
        HttpRequestRefused, match=r"tools.http.allow: .*/admin matches no allowed URL pattern"
    ):
        harness.call({"url": site.url("/admin")})
    with pytest.raises(HttpRequestRefused, match=r"'\.' or '\.\.' segments"):
        harness.call({"url": site.url("/api/%2e%2e/admin")})
    with pytest.raises(HttpRequestRefused, match=r"tools.http.allow"):
        harness.call({"url": f"http://127.0.0.1:{site.port + 1 if site.port < 65535 else 1}/api/x"})
    with pytest.raises(HttpRequestRefused, match=r"tools.http.methods: DELETE is not allowed"):
        harness.call({"method": "DELETE", "url": site.url("/api/x")})
    with pytest.raises(HttpRequestRefused, match="user name or password"):
        harness.call({"url": f"http://user:pw@127.0.0.1:{site.port}/api/x"})
    assert site.seen == []
    assert len(harness.events_of(HTTP_REFUSED)) == 5


def test_nothing_is_allowed_unless_declared(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, {})
    with pytest.raises(HttpRequestRefused, match=r"allowed: none"):
        harness.call({"url": site.url("/data")})


def test_a_loopback_host_without_allow_private_is_refused(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, {"allow": [site.url("/")]})
    with pytest.raises(HttpRequestRefused, match=r"127\.0\.0\.1 is a loopback address"):
        harness.call({"url": site.url("/data")})
    assert site.seen == []


def test_a_name_resolving_to_a_private_address_is_refused(tmp_path: Path, site: FakeSite) -> None:
    # `localhost` resolves on the host itself; the pattern names it, but not with allow_private.
    harness = Harness(tmp_path, {"allow": [f"http://localhost:{site.port}/"]})
    with pytest.raises(HttpRequestRefused, match=r"localhost \(resolved to .*\) is a loopback address"):
        harness.call({"url": f"http://localhost:{site.port}/data"})

    async def to_loopback(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    (tmp_path / "b").mkdir()
    sneaky = Harness(tmp_path / "b", {"allow": [f"http://feed.example:{site.port}/"]}, resolver=to_loopback)
    with pytest.raises(HttpRequestRefused, match=r"feed.example \(resolved to 127.0.0.1\) is a loopback"):
        sneaky.call({"url": f"http://feed.example:{site.port}/data"})
    assert site.seen == []


def test_the_resolved_address_is_the_one_connected_to(tmp_path: Path, site: FakeSite) -> None:
    async def pinned(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    harness = Harness(
        tmp_path,
        {"allow": [{"url": f"http://feed.example:{site.port}/", "allow_private": True}]},
        resolver=pinned,
    )
    answer = harness.call({"url": f"http://feed.example:{site.port}/data"})
    assert answer.startswith("HTTP 200")
    assert site.seen[-1].headers["host"] == f"feed.example:{site.port}"


def test_a_redirect_to_a_private_address_is_refused(tmp_path: Path, site: FakeSite) -> None:
    other = start_site()
    try:
        policy = {
            "allow": [site.url("/"), f"http://localhost:{other.port}/"],
            "allow_private": False,
        }
        policy["allow"][0] = {"url": site.url("/"), "allow_private": True}
        harness = Harness(tmp_path, policy)
        target = f"http://localhost:{other.port}/data"
        with pytest.raises(HttpRequestRefused, match=r"localhost \(resolved to .*\) is a loopback address"):
            harness.call({"url": site.url(f"/redirect?to={target}")})
        with pytest.raises(HttpRequestRefused, match=r"tools.http.allow: http://10.0.0.7/ matches no"):
            harness.call({"url": site.url("/redirect?to=http://10.0.0.7/")})
        assert other.seen == []
    finally:
        other.close()


def test_a_redirect_within_the_policy_is_followed_without_leaking_credentials(
    tmp_path: Path, site: FakeSite
) -> None:
    other = start_site()
    try:
        policy = local_policy(site)
        policy["allow"] = [site.url("/"), other.url("/")]
        harness = Harness(tmp_path, policy)
        answer = harness.call(
            {
                "url": site.url(f"/redirect?to={other.url('/echo')}"),
                "headers": {"X-Api-Key": "{{secret:demo_token}}", "Accept": "application/json"},
            }
        )
        assert "HTTP 200" in answer and f"redirected: {other.url('/echo')}" in answer
        assert site.seen[-1].headers["x-api-key"] == TOKEN
        assert "x-api-key" not in other.seen[-1].headers  # another origin: secrets stay behind
        assert other.seen[-1].headers["accept"] == "application/json"
        assert harness.events_of(HTTP_REQUESTED)[-1]["sent"] == 2  # the redirect counts in the budget
    finally:
        other.close()


def test_too_many_redirects_are_refused(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site, max_redirects=1))
    hop = site.url("/redirect?to=" + site.url("/redirect?to=/data"))
    with pytest.raises(HttpRequestRefused, match=r"tools\.http\.max_redirects"):
        harness.call({"url": hop})


def test_response_bodies_are_capped_in_bytes_and_time(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site, max_response_bytes="1KiB", timeout_s=1))
    answer = harness.call({"url": site.url("/big?size=50000")})
    assert "[body cut at 1024 bytes" in answer and answer.count("x") < 1100
    slow = harness.call({"url": site.url("/slow?s=3")})
    assert slow.startswith("FAILED") and "no complete answer within 1 s" in slow
    failed = harness.events_of(HTTP_REQUESTED)[-1]
    assert failed["ok"] is False and failed["status"] is None


def test_html_can_be_reduced_to_readable_text(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site))
    raw = harness.call({"url": site.url("/page.html")})
    readable = harness.call({"url": site.url("/page.html"), "readable": True})
    assert "<script>" in raw
    assert "streaming exports" in readable and "<script>" not in readable and "tracking" not in readable


def test_a_post_waits_for_an_operators_approval(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(
        tmp_path, local_policy(site, methods=["GET", "POST"], approval={"*": "required", "GET": "none"})
    )
    assert harness.tools.approval_required() == ["http_request.POST"]
    arguments = {"method": "POST", "url": site.url("/echo"), "body": "hello"}
    with pytest.raises(HttpRequestRefused, match=r"tools.http.approval: POST requests need .*not asked for"):
        harness.call(arguments)
    key = approval_key("item-1", "http_request", arguments)
    item = harness.approvals.request(
        "researcher", ApprovalRequest(key=key, tool="http_request.POST", arguments=arguments, timeout_s=60)
    )
    with pytest.raises(HttpRequestRefused, match=r"approval: pending"):
        harness.call(arguments)
    assert site.seen == []
    harness.approvals.decide(item.id, "approved")
    assert harness.call(arguments).startswith("HTTP 200")
    assert site.seen[-1].body == b"hello"
    assert harness.call({"url": site.url("/data")}).startswith("HTTP 200")  # GET needs none


def test_the_daily_request_budget_is_enforced(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site, requests_per_day=2))
    harness.call({"url": site.url("/data")})
    harness.call({"url": site.url("/data")})
    with pytest.raises(
        HttpRequestRefused, match=r"tools.http.requests_per_day: 2 requests a day .* 2 were made"
    ):
        harness.call({"url": site.url("/data")})
    assert len(site.seen) == 2


def test_framing_headers_and_bad_arguments_are_refused(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site))
    answer = harness.call({"url": site.url("/data"), "headers": {"Host": "internal.example"}})
    assert answer.startswith("FAILED") and "set by the orchestrator" in answer
    answer = harness.call({"url": site.url("/data"), "headers": {"X-A": "a\r\nX-B: b"}})
    assert answer.startswith("FAILED") and "one line" in answer
    assert harness.call({"urls": "x"}).startswith("FAILED http_request: invalid arguments")
    assert "printable ASCII only" in harness.call({"url": site.url("/data"), "headers": {"X-Name": "café"}})
    assert "no spaces or control characters" in harness.call({"url": site.url("/data\x00")})
    assert site.seen == []


def test_requests_are_counted_per_agent_and_host(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site))
    harness.call({"url": site.url("/data")})
    harness.call({"url": site.url("/data")})
    with pytest.raises(HttpRequestRefused):
        harness.call({"url": "https://elsewhere.example/"})
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in HttpRequestCollector(harness.db).collect()
        for sample in family.samples
    }
    ok = ("flotilla_http_requests_total", (("agent", "researcher"), ("host", "127.0.0.1"), ("outcome", "ok")))
    refused = (
        "flotilla_http_requests_total",
        (("agent", "researcher"), ("host", "-"), ("outcome", "refused")),
    )
    assert samples[ok] == 2 and samples[refused] == 1
    assert (
        samples[("flotilla_http_response_bytes_total", (("agent", "researcher"), ("host", "127.0.0.1")))] > 0
    )


def test_requests_show_in_the_turn_they_were_made_in(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site))
    page = TranscriptPage(
        messages=[
            TranscriptMessage(
                id="m1", role="user", content="fetch", at="2000-01-01T00:00:00Z", item_id="item-1"
            )
        ]
    )
    harness.call({"url": site.url("/data")})
    transcript = build_transcript("researcher", page, [], harness.events.recent(100, "researcher"))
    [mark] = transcript.turns[0].marks
    assert mark.type == HTTP_REQUESTED and mark.data["status"] == 200
    shown = click.unstyle(mark_line(mark))
    assert f"⇄ GET {site.url('/data')} → 200 · " in shown and " bytes · " in shown


def test_a_secret_in_the_url_reaches_no_log(tmp_path: Path, site: FakeSite) -> None:
    stream = io.StringIO()
    root, httpx_logger = logging.getLogger(), logging.getLogger("httpx")
    saved = (list(root.handlers), root.level, httpx_logger.level)
    configure_logging(level="debug", stream=stream)
    try:
        harness = Harness(tmp_path, local_policy(site))
        answer = harness.call({"url": site.url("/data?key={{secret:demo_token}}")})
        assert answer.startswith("HTTP 200")
        assert site.seen[-1].path == f"/data?key={TOKEN}"
        assert "/data?key={{secret:demo_token}}" in stream.getvalue()
        assert TOKEN not in stream.getvalue()
        assert harness.events_of(HTTP_REQUESTED)[-1]["url"].endswith("?key={{secret:demo_token}}")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        httpx_logger.setLevel(saved[2])


def test_a_compressed_body_is_decoded_only_up_to_the_cap(tmp_path: Path, site: FakeSite) -> None:
    bomb()  # made before measuring
    harness = Harness(tmp_path, local_policy(site, max_response_bytes="64KiB"))
    tracemalloc.start()
    try:
        answer = harness.call({"url": site.url("/bomb")})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert answer.startswith("HTTP 200") and "[body cut at 65536 bytes" in answer
    assert peak < 16 * 1024 * 1024, f"decoding took {peak} bytes"


def test_requests_sent_before_a_refused_redirect_count_in_the_budget(tmp_path: Path, site: FakeSite) -> None:
    harness = Harness(tmp_path, local_policy(site, requests_per_day=2))
    bounce = {"url": site.url("/redirect?to=http://10.0.0.7/")}
    for _ in range(2):
        with pytest.raises(HttpRequestRefused, match=r"tools\.http\.allow"):
            harness.call(bounce)
    assert len(site.seen) == 2 and [e["sent"] for e in harness.events_of(HTTP_REFUSED)] == [1, 1]
    with pytest.raises(HttpRequestRefused, match=r"requests_per_day: 2 requests a day .* 2 were made"):
        harness.call({"url": site.url("/data")})
    assert len(site.seen) == 2

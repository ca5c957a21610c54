"""The browser's egress proxy as an attacker's page would use it, on loopback only: every request
is held to the agent's tools.http policy, and a refused one never reaches its target."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest

from orchestrator.browser.proxy import EgressProxy, ProxyLog
from orchestrator.config.egress import HttpPolicy
from orchestrator.egress.budget import BudgetSpent
from tests.orchestrator.browser.pages import JS_PAGE, Listener, LocalSite, start_listener, start_site


@pytest.fixture
def site() -> Iterator[LocalSite]:
    running = start_site({"/page": JS_PAGE})
    yield running
    running.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    running = start_listener()
    yield running
    running.close()


async def fixed_resolver(host: str, port: int) -> list[str]:
    """Every name resolves to loopback, as an attacker's DNS would answer."""
    return ["127.0.0.1"]


class Budget:
    def __init__(self, left: int) -> None:
        self.left = left

    async def take(self) -> None:
        if self.left <= 0:
            raise BudgetSpent("tools.http.requests_per_day: 0 left")
        self.left -= 1


@dataclass
class Proxied:
    client: httpx.AsyncClient
    record: ProxyLog
    budget: Budget
    port: int


Scenario = Callable[[Proxied], Awaitable[None]]


def through_proxy(site: LocalSite, scenario: Scenario, *, client_address: str = "127.0.0.1") -> None:
    """Run `scenario` with an HTTP client whose every request goes through a proxy that allows
    the site (a private address, named exactly) and http://public.test/, GET only."""
    policy = HttpPolicy.model_validate(
        {
            "allow": [
                {"url": f"http://127.0.0.1:{site.port}/", "allow_private": True},
                "http://public.test/",
            ],
            "methods": ["GET"],
        }
    )

    async def run() -> None:
        record = ProxyLog()
        budget = Budget(5)
        proxy = EgressProxy(policy, fixed_resolver, budget.take, client=client_address, record=record)
        port = await proxy.start("127.0.0.1")
        try:
            # The proxy serves one request a connection, then closes it: a client that keeps
            # connections alive could reuse one just as it closes.
            fresh = httpx.Limits(max_keepalive_connections=0)
            async with httpx.AsyncClient(
                proxy=f"http://127.0.0.1:{port}", trust_env=False, limits=fresh
            ) as client:
                await scenario(Proxied(client, record, budget, port))
        finally:
            await proxy.close()

    asyncio.run(run())


def test_an_allowed_page_comes_through(site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        answer = await p.client.get(site.url("/page"))
        assert answer.status_code == 200
        assert "rendered by script" in answer.text
        assert [r.refused for r in p.record.drain()] == [""]
        assert p.budget.left == 4

    through_proxy(site, scenario)
    assert site.paths() == ["/page"]


def test_another_port_of_the_host_is_refused_and_never_reached(site: LocalSite, listener: Listener) -> None:
    async def scenario(p: Proxied) -> None:
        answer = await p.client.get(f"http://127.0.0.1:{listener.port}/admin")
        assert answer.status_code == 403
        assert "tools.http.allow" in answer.text
        assert "tools.http.allow" in p.record.drain()[0].refused

    through_proxy(site, scenario)
    assert listener.hits == []


def test_a_name_resolving_to_a_private_address_is_refused_after_dns(site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        answer = await p.client.get("http://public.test/")
        assert answer.status_code == 403
        assert "loopback address" in answer.text
        assert p.budget.left == 5

    through_proxy(site, scenario)


def test_a_redirect_to_a_refused_host_is_refused(site: LocalSite, listener: Listener) -> None:
    async def scenario(p: Proxied) -> None:
        target = f"http://127.0.0.1:{listener.port}/secret"
        answer = await p.client.get(site.url(f"/redirect?to={target}"), follow_redirects=True)
        assert answer.status_code == 403
        assert "tools.http.allow" in answer.text

    through_proxy(site, scenario)
    assert listener.hits == []


def test_a_method_outside_the_policy_is_refused(site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        answer = await p.client.post(site.url("/login"), content=b"user=a")
        assert answer.status_code == 403
        assert "tools.http.methods" in answer.text

    through_proxy(site, scenario)
    assert site.seen == []


def test_a_tunnel_to_a_host_outside_the_policy_is_refused(site: LocalSite, listener: Listener) -> None:
    async def scenario(p: Proxied) -> None:
        with pytest.raises(httpx.ProxyError):
            await p.client.get(f"https://127.0.0.1:{listener.port}/")
        assert p.record.drain()[0].method == "CONNECT"

    through_proxy(site, scenario)
    assert listener.hits == []


def test_the_daily_budget_stops_page_requests(site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        p.budget.left = 1
        assert (await p.client.get(site.url("/page"))).status_code == 200
        refused = await p.client.get(site.url("/page"))
        assert refused.status_code == 403
        assert "requests_per_day" in refused.text

    through_proxy(site, scenario)
    assert len(site.seen) == 1


def test_only_the_sandbox_address_may_use_the_proxy(site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        with pytest.raises(httpx.HTTPError):
            await p.client.get(site.url("/page"))

    through_proxy(site, scenario, client_address="127.0.0.9")
    assert site.seen == []


def test_a_garbage_request_is_closed_without_reaching_anything(site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", p.port)
        writer.write(b"\x16\x03\x01 nonsense\r\n\r\n")
        await writer.drain()
        assert await reader.read() == b""
        writer.close()
        assert p.record.drain() == []

    through_proxy(site, scenario)
    assert site.seen == []


def test_a_keep_alive_client_is_told_each_answer_closes_the_connection(site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        async with httpx.AsyncClient(proxy=f"http://127.0.0.1:{p.port}", trust_env=False) as keeping:
            for _ in range(3):
                answer = await keeping.get(site.url("/page"))
                assert answer.status_code == 200
                assert answer.headers["connection"] == "close"

    through_proxy(site, scenario)
    assert site.paths() == ["/page"] * 3


def test_a_page_cannot_name_another_site_in_its_host_header(site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        answer = await p.client.get(site.url("/page"), headers={"host": "internal.example"})
        assert answer.status_code == 200

    through_proxy(site, scenario)
    assert site.hosts == [f"127.0.0.1:{site.port}"]

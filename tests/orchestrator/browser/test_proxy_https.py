"""HTTPS through the browser's egress proxy, on loopback only: the proxy ends the page's TLS with
the session's key, checks the method and path of the request inside against tools.http, and
sends it on to a local HTTPS site whose certificate it verifies. A refused request never reaches
the site."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import ssl
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from orchestrator.browser.interception import Interception
from orchestrator.browser.proxy import EgressProxy, ProxyLog
from orchestrator.config.egress import HttpPolicy
from tests.orchestrator.browser.pages import JS_PAGE, LocalSite, SiteKey, make_site_key, start_site


@pytest.fixture
def site_key(tmp_path: Path) -> SiteKey:
    return make_site_key(tmp_path)


@pytest.fixture
def tls_site(site_key: SiteKey) -> Iterator[LocalSite]:
    running = start_site({"/open/page": JS_PAGE, "/private/keys": "the keys"}, tls=site_key.server)
    yield running
    running.close()


async def loopback_resolver(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


async def unlimited() -> None:
    return None


@dataclass
class Proxied:
    client: httpx.AsyncClient
    record: ProxyLog
    port: int
    interception: Interception


Scenario = Callable[[Proxied], Awaitable[None]]


def through_intercepting_proxy(site: LocalSite, upstream: ssl.SSLContext | None, scenario: Scenario) -> None:
    """Run `scenario` with a client (standing in for the sandbox's Chromium) whose HTTPS goes
    through an intercepting proxy allowing GET under the site's /open/ only."""
    policy = HttpPolicy.model_validate(
        {"allow": [{"url": site.url("/open/"), "allow_private": True}], "methods": ["GET"]}
    )

    async def run() -> None:
        record = ProxyLog()
        interception = Interception()
        proxy = EgressProxy(
            policy,
            loopback_resolver,
            unlimited,
            client="127.0.0.1",
            record=record,
            interception=interception,
            upstream_tls=upstream,
        )
        port = await proxy.start("127.0.0.1")
        try:
            # Chromium accepts the proxy's certificate by its key (tested in test_browser_docker):
            # this client accepts any.
            async with httpx.AsyncClient(
                proxy=f"http://127.0.0.1:{port}", trust_env=False, verify=False
            ) as client:
                await scenario(Proxied(client, record, port, interception))
        finally:
            await proxy.close()

    asyncio.run(run())


def test_an_allowed_https_path_comes_through_and_a_refused_one_never_reaches_the_site(
    tls_site: LocalSite, site_key: SiteKey
) -> None:
    async def scenario(p: Proxied) -> None:
        allowed = await p.client.get(tls_site.url("/open/page"))
        assert allowed.status_code == 200
        assert "rendered by script" in allowed.text
        refused = await p.client.get(tls_site.url("/private/keys"))
        assert refused.status_code == 403
        assert "tools.http.allow" in refused.text
        records = p.record.drain()
        assert [(r.method, r.url, bool(r.refused)) for r in records] == [
            ("GET", tls_site.url("/open/page"), False),
            ("GET", tls_site.url("/private/keys"), True),
        ]

    through_intercepting_proxy(tls_site, site_key.trusted, scenario)
    assert tls_site.paths() == ["/open/page"]


def test_a_method_outside_the_policy_inside_https_is_refused(tls_site: LocalSite, site_key: SiteKey) -> None:
    async def scenario(p: Proxied) -> None:
        answer = await p.client.post(tls_site.url("/open/page"), content=b"user=a")
        assert answer.status_code == 403
        assert "tools.http.methods" in answer.text

    through_intercepting_proxy(tls_site, site_key.trusted, scenario)
    assert tls_site.seen == []


def test_a_site_whose_certificate_does_not_verify_gets_no_request(tls_site: LocalSite) -> None:
    async def scenario(p: Proxied) -> None:
        answer = await p.client.get(tls_site.url("/open/page"))
        assert answer.status_code == 403
        assert "CERTIFICATE_VERIFY_FAILED" in answer.text

    through_intercepting_proxy(tls_site, None, scenario)
    assert tls_site.seen == []


def test_the_proxy_presents_a_certificate_with_the_sessions_key(
    tls_site: LocalSite, site_key: SiteKey
) -> None:
    async def scenario(p: Proxied) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", p.port)
        writer.write(f"CONNECT 127.0.0.1:{tls_site.port} HTTP/1.1\r\n\r\n".encode())
        await writer.drain()
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 200")
        any_certificate = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        any_certificate.check_hostname = False
        any_certificate.verify_mode = ssl.CERT_NONE
        await writer.start_tls(any_certificate, server_hostname="127.0.0.1")
        presented = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        writer.close()
        spki = (
            x509.load_der_x509_certificate(presented)
            .public_key()
            .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        assert base64.b64encode(hashlib.sha256(spki).digest()).decode() == p.interception.spki_hash

    through_intercepting_proxy(tls_site, site_key.trusted, scenario)
    assert tls_site.seen == []


def test_a_keep_alive_client_is_told_each_answer_closes_the_connection(
    tls_site: LocalSite, site_key: SiteKey
) -> None:
    async def scenario(p: Proxied) -> None:
        for _ in range(3):
            answer = await p.client.get(tls_site.url("/open/page"))
            assert answer.status_code == 200
            assert answer.headers["connection"] == "close"

    through_intercepting_proxy(tls_site, site_key.trusted, scenario)
    assert tls_site.paths() == ["/open/page"] * 3

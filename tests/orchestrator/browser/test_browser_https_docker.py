"""HTTPS pages in a real sandbox: Chromium accepts only its session proxy's key, and the proxy
checks the path of every request inside the tunnel; a refused path never reaches the site."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.browser.arguments import BROWSER_NAVIGATE
from tests.orchestrator.browser.conftest import Browsing
from tests.orchestrator.browser.pages import JS_PAGE, LocalSite, SiteKey, make_site_key, start_site

pytestmark = pytest.mark.docker

# A page of an allowed path that loads one of a refused path, in the same tunnel's host.
EMBEDDING_PAGE = """<html><head><title>Embeds</title></head><body>
<img src="/private/keys"><p>embedding</p></body></html>"""


@pytest.fixture
def site_key(tmp_path: Path) -> SiteKey:
    return make_site_key(tmp_path)


@pytest.fixture
def tls_site(site_key: SiteKey) -> Iterator[LocalSite]:
    pages = {"/open/page": JS_PAGE, "/open/embeds": EMBEDDING_PAGE, "/private/keys": "the keys"}
    running = start_site(pages, tls=site_key.server)
    yield running
    running.close()


def test_an_https_page_renders_and_a_refused_https_path_never_reaches_the_site(
    tmp_path: Path, browser_image_tag: str, tls_site: LocalSite, site_key: SiteKey
) -> None:
    tools = {
        "http": {"allow": [{"url": tls_site.url("/open/"), "allow_private": True}], "methods": ["GET"]},
        "browser": {},
    }
    browsing = Browsing(tmp_path / "agent", browser_image_tag, tools, upstream_tls=site_key.trusted)

    async def scenario() -> None:
        try:
            opened = await browsing.call(BROWSER_NAVIGATE, url=tls_site.url("/open/page"))
            assert opened.ok, opened.output
            assert "rendered by script 42" in opened.output
            embedding = await browsing.call(BROWSER_NAVIGATE, url=tls_site.url("/open/embeds"))
            assert embedding.ok, embedding.output
        finally:
            await browsing.sessions.close_all()

    asyncio.run(scenario())
    assert "/open/page" in tls_site.paths()
    assert "/private/keys" not in tls_site.paths()
    assert "tools.http.allow" in browsing.recorded()

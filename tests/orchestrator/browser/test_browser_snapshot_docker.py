"""`browser_snapshot` in a real sandbox reads Chromium's accessibility tree: accessible names,
nothing hidden from assistive technology, and never the text a secret handle typed into a field."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.browser.arguments import BROWSER_CLICK, BROWSER_NAVIGATE, BROWSER_SNAPSHOT, BROWSER_TYPE
from tests.orchestrator.browser.conftest import PASSWORD, Browsing, browse
from tests.orchestrator.browser.pages import LocalSite

pytestmark = pytest.mark.docker

FORM_PAGE = """<html><head><title>Form</title></head><body>
<h1>Account</h1><span aria-hidden="true">decoration hidden from readers</span>
<label>Token <input name="token"></label>
<button aria-label="Close dialog" onclick="document.title = 'Closed'">X</button>
</body></html>"""


def line_with(snapshot: str, start: str) -> str:
    return next(line for line in snapshot.splitlines() if line.startswith(start))


def test_the_snapshot_is_the_accessibility_tree_and_never_shows_a_typed_secret(
    tmp_path: Path, browser_image_tag: str, site: LocalSite
) -> None:
    site.pages["/form"] = FORM_PAGE
    seen: list[str] = []

    async def scenario(b: Browsing) -> None:
        assert (await b.call(BROWSER_NAVIGATE, url=site.url("/form"))).ok
        first = (await b.call(BROWSER_SNAPSHOT)).output
        assert 'heading "Account" [level=1]' in first
        assert "decoration hidden from readers" not in first
        token = line_with(first, 'textbox "Token"').rsplit("[ref=", 1)[1].rstrip("]")
        typed = await b.call(BROWSER_TYPE, ref=token, text="{{secret:site_password}}")
        assert typed.ok, typed.output
        second = (await b.call(BROWSER_SNAPSHOT)).output
        seen.extend([first, second])
        assert line_with(second, 'textbox "Token"') == line_with(first, 'textbox "Token"')
        close = line_with(second, 'button "Close dialog"').rsplit("[ref=", 1)[1].rstrip("]")
        assert (await b.call(BROWSER_CLICK, ref=close)).ok
        assert "title: Closed" in (await b.call(BROWSER_SNAPSHOT)).output

    browsing = browse(tmp_path, browser_image_tag, site, scenario)
    for text in [*seen, browsing.recorded()]:
        assert PASSWORD not in text

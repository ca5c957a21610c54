"""A screenshot an agent's browser took, in the agent's transcript on the dashboard, in a real
headless Chromium: the browser actions as marks, the screenshot loaded from the operator's route
as a version of its workspace file."""

from __future__ import annotations

import struct
import textwrap
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_dashboard_browser import WAIT_MS, dashboard

from agent_runtime.protocol import ItemKind
from agent_runtime.workspace.binary import VersionedBinaries
from agent_runtime.workspace.history import HistoryLog, Turn
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.wiring import build_services

pytestmark = pytest.mark.browser

FLEET = """\
version: 1
fleet: shots
agents:
  alpha:
    role: browses
    tools:
      http: {allow: ["https://shop.example/"]}
      browser: {}
"""
SHOT = "screenshots/shop.png"
CALL = {"id": "call_1", "type": "function", "function": {"name": "browser_screenshot", "arguments": "{}"}}


def png(width: int, height: int) -> bytes:
    """A plain grey PNG of that size."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def browsed(tmp_path: Path) -> Iterator[Services]:
    root = tmp_path / "fleet"
    root.mkdir()
    (root / "fleet.yaml").write_text(textwrap.dedent(FLEET))
    services = build_services(load_fleet(root / "fleet.yaml"), FakeBackend())
    assert all(result.ok for result in services.manager.apply())
    item = services.inbox.submit("alpha", ItemKind.OPERATOR_MESSAGE, "operator", "show me the shop").id
    log = HistoryLog(services.paths.agent_storage("alpha"))
    log.append(Turn(role="user", content="show me the shop", item_id=item))
    log.append(Turn(role="assistant", content="", tool_calls=(CALL,), item_id=item))
    screenshots = VersionedBinaries(services.paths.agent_dir("alpha"))
    screenshots.write("shop", png(64, 40), "browser", "https://shop.example/", cap=2**20, quota=2**20)
    services.events.publish(
        "browser.action",
        "alpha",
        tool="browser_screenshot",
        session="main",
        url="https://shop.example/",
        ok=True,
        detail="",
        bytes=120,
        requests=0,
        refused=[],
        duration_s=0.2,
        file=SHOT,
        version=1,
    )
    log.append(
        Turn(
            role="tool",
            content=f"screenshot saved as {SHOT}",
            tool_call_id="call_1",
            name="browser_screenshot",
            item_id=item,
        )
    )
    yield services
    services.db.close()


def test_a_screenshot_shows_in_the_transcript(browsed: Services) -> None:
    with dashboard(browsed) as session:
        page = session.page
        page.locator("#fleet-table .agent-link", has_text="alpha").click()
        page.locator('.page-tabs a[data-tab="transcript"]').click()
        image = page.locator(".transcript .mark-http img.screenshot")
        image.wait_for(timeout=WAIT_MS)
        page.wait_for_function("() => document.querySelector('img.screenshot').complete", timeout=WAIT_MS)
        assert image.evaluate("(img) => img.naturalWidth") == 64
        assert "browser_screenshot https://shop.example/" in page.locator(".transcript").inner_text()
    assert session.page_errors == []

"""Screenshots taken by agents' browsers, kept by the orchestrator for the operator under
`.flotilla/browser/<agent>/`: PNG files named by time, at most `screenshots_kept` per agent (the
oldest go first), none larger than `screenshot_bytes`. The orchestrator writes them from bytes it
received over CDP; no agent can write or name a path here."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.browser.session import SessionFailed
from orchestrator.config.browser import BrowserPolicy

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SCREENSHOT_NAME = r"screenshot-[0-9]{8}T[0-9]{12}Z\.png"


class ScreenshotShelf:
    def __init__(self, root: Path, policy_of: dict[str, BrowserPolicy]) -> None:
        self._root = root
        self._policy_of = policy_of
        self._lock = threading.Lock()

    def folder(self, agent: str) -> Path:
        return self._root / agent

    def keep(self, agent: str, png: bytes) -> str:
        """Store the screenshot; its file name. SessionFailed when it is over the cap."""
        policy = self._policy_of.get(agent) or BrowserPolicy()
        if not png.startswith(PNG_MAGIC):
            raise SessionFailed("screenshot: the browser did not return a PNG")
        if len(png) > policy.screenshot_cap:
            raise SessionFailed(
                f"screenshot: {len(png)} bytes is over tools.browser.screenshot_bytes ({policy.screenshot_bytes})"
            )
        folder = self.folder(agent)
        with self._lock:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
            name = f"screenshot-{stamp}.png"
            (folder / name).write_bytes(png)
            kept = sorted(folder.glob("screenshot-*.png"))
            for old in kept[: max(0, len(kept) - policy.screenshots_kept)]:
                old.unlink(missing_ok=True)
        return name

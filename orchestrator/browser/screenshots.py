"""Screenshots taken by agents' browsers, saved into the operator's copy of the agent's workspace
as `screenshots/<name>.png`: each screenshot of a name is a new version of that file (author
"browser", the page's redacted URL as its reason), none larger than `screenshot_bytes`, the
folder within the agent's workspace quota, at most `screenshots_kept` versions of a name (the
oldest go first). The orchestrator writes them from bytes it received over CDP, under a name the
tool's arguments checked; no agent can write or name a path here."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from agent_runtime import PNG_MAGIC, SCREENSHOTS, VersionedBinaries, WorkspaceError, locked_versions
from agent_runtime.protocol import AgentRuntimeConfig, WorkspaceWriteResult
from orchestrator.browser.session import SessionFailed
from orchestrator.config.browser import BrowserPolicy
from orchestrator.workspaces.retention import prune_versions

DEFAULT_NAME = "screenshot"
WORKSPACE_QUOTA_BYTES = AgentRuntimeConfig.model_fields["workspace_quota_bytes"].default
_NOT_IN_NAME = re.compile(r"[^a-z0-9_-]+")

SavedScreenshot = Callable[[str, str, bytes], None]
"""Hands a saved screenshot (agent, path in the workspace, PNG) on to the agent's working copy."""


@dataclass(frozen=True)
class ScreenshotPlace:
    """Where the screenshots of the fleet's agents go, and how much of it each may take."""

    agent_dir: Callable[[str], Path]
    policy_of: dict[str, BrowserPolicy]
    quota_bytes: int = WORKSPACE_QUOTA_BYTES
    saved: SavedScreenshot | None = None


def default_name(item: str) -> str:
    """The file name of a screenshot the agent did not name: its item's id, made a safe name."""
    name = _NOT_IN_NAME.sub("-", item.lower()).strip("-_")[:64].strip("-_")
    return name or DEFAULT_NAME


class ScreenshotShelf:
    def __init__(self, place: ScreenshotPlace) -> None:
        self._place = place

    def files(self, agent: str) -> VersionedBinaries:
        return VersionedBinaries(self._place.agent_dir(agent), SCREENSHOTS)

    def keep(self, agent: str, name: str, png: bytes, url: str) -> WorkspaceWriteResult:
        """Save the screenshot as the newest version of `screenshots/<name>.png`; SessionFailed,
        with nothing written, when it is not a PNG, over the cap or over the workspace quota."""
        policy = self._place.policy_of.get(agent) or BrowserPolicy()
        if not png.startswith(PNG_MAGIC):
            raise SessionFailed("screenshot: the browser did not return a PNG")
        if len(png) > policy.screenshot_cap:
            raise SessionFailed(
                f"screenshot: {len(png)} bytes is over tools.browser.screenshot_bytes "
                f"({policy.screenshot_bytes}); nothing was saved"
            )
        files = self.files(agent)
        try:
            saved = files.write(
                name,
                png,
                "browser",
                url[:500],
                cap=policy.screenshot_cap,
                quota=self._place.quota_bytes,
            )
        except WorkspaceError as refused:
            raise SessionFailed(f"screenshot: {refused}") from None
        with locked_versions(files.versions_root):
            prune_versions(
                files.versions_root,
                files.name_of(name),
                policy.screenshots_kept,
                None,
                datetime.now(UTC),
                files.suffix,
            )
        if self._place.saved is not None:
            self._place.saved(agent, saved.name, png)
        return saved

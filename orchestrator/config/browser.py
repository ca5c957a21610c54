"""fleet.yaml's `tools.browser` and `tools.search` of an agent.

`tools.browser` gives the agent a headless browser in a throwaway sandbox; the pages it may open
are those its `tools.http` policy allows (the same patterns, methods, address checks and daily
budget apply to every request a page makes). `tools.search` names the web search provider the
`web_search` tool calls, through the same policy.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.config.egress import parse_pattern
from orchestrator.config.secrets import secret_handles
from orchestrator.config.units import parse_duration, parse_memory

MIN_BROWSER_MEMORY_BYTES = 128 * 1024 * 1024
MAX_SCREENSHOT_BYTES = 16 * 1024 * 1024
WINDOW = re.compile(r"^([1-9][0-9]{2,3})x([1-9][0-9]{2,3})$")
SearchKind = Literal["searxng", "brave", "json"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BrowserPolicy(_Strict):
    """Declared (`{}` for the defaults), the agent gets the browser_* tools; each session is a
    fresh sandbox with these caps, closed when idle or when its item ends."""

    memory: str | int = Field(
        default="768m",
        description="Memory of one browser sandbox (bytes, or with k/m/g); floor 128m. A page past "
        "it crashes and the call says so",
    )
    cpus: float = Field(default=1.0, ge=0.1, le=16, description="CPU cores one browser sandbox may use")
    pids: int = Field(default=256, ge=64, le=4096, description="Most processes and threads in a sandbox")
    timeout_s: float = Field(
        default=30.0, gt=0, le=300, description="Longest one browser action may take (a page load included)"
    )
    pages_per_session: int = Field(
        default=50, ge=1, le=10_000, description="Navigations one session may make; then it is closed"
    )
    sessions: int = Field(
        default=2, ge=1, le=16, description="Sessions the agent may hold at once (the oldest idle closes)"
    )
    idle_timeout: str = Field(default="5m", description="A session unused this long is closed (30s, 5m)")
    text_chars: int = Field(
        default=20_000, ge=500, le=500_000, description="Characters of page text or snapshot returned"
    )
    screenshot_bytes: str | int = Field(
        default="2MiB", description="Largest screenshot kept (PNG); a larger one is refused"
    )
    screenshots_kept: int = Field(
        default=20, ge=1, le=1000, description="Versions kept of each screenshot name; the oldest go first"
    )
    evaluate: bool = Field(
        default=False, description="true: the agent may run its own JavaScript in pages (browser_evaluate)"
    )
    window: str = Field(default="1280x800", description="Viewport of the pages, WIDTHxHEIGHT")

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str | int) -> str | int:
        if parse_memory(value) < MIN_BROWSER_MEMORY_BYTES:
            raise ValueError(f"memory {value!r} is below the floor of 128m")
        return value

    @field_validator("idle_timeout")
    @classmethod
    def _idle(cls, value: str) -> str:
        parse_duration(value)
        return value

    @field_validator("screenshot_bytes")
    @classmethod
    def _screenshot(cls, value: str | int) -> str | int:
        if not 1024 <= parse_memory(value) <= MAX_SCREENSHOT_BYTES:
            raise ValueError("screenshot_bytes: between 1KiB and 16MiB")
        return value

    @field_validator("window")
    @classmethod
    def _window(cls, value: str) -> str:
        if not WINDOW.match(value):
            raise ValueError(f"window {value!r}: give WIDTHxHEIGHT in pixels, e.g. 1280x800")
        return value

    @property
    def memory_bytes(self) -> int:
        return parse_memory(self.memory)

    @property
    def idle_timeout_s(self) -> float:
        return parse_duration(self.idle_timeout)

    @property
    def screenshot_cap(self) -> int:
        return parse_memory(self.screenshot_bytes)


class SearchProvider(_Strict):
    """The web search the `web_search` tool calls: a SearXNG instance's JSON API, Brave Search's
    API, or any endpoint answering `{results: [{title, url, snippet}]}` (`json`)."""

    kind: SearchKind = Field(description="searxng, brave or json (the adapter that reads its answers)")
    url: str = Field(
        description="The search endpoint, e.g. https://searx.example/search; it must match an "
        "allow pattern of tools.http (the request goes through that policy)"
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Headers sent with each search, e.g. {X-Subscription-Token: '{{secret:brave_key}}'}; "
        "the agent never sees the values",
    )
    results: int = Field(default=5, ge=1, le=20, description="Results returned per search")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parse_pattern(value)
        return value

    def secrets(self) -> list[str]:
        """The declared secrets its headers name as {{secret:NAME}}."""
        return sorted({name for value in self.headers.values() for name in secret_handles(value)})

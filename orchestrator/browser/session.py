"""One browser session: a page in a sandboxed Chromium, driven over CDP by Playwright.

Every action has the policy's time cap; a page that crashes (its memory cap) or a browser that
goes away ends the session, and the call says why. What the page shows goes back to the agent
through the fleet's redaction, so a secret typed into a form is never read back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from orchestrator.browser.snapshot import REF_PREFIX, AxTree, RefBook, is_password, render
from orchestrator.config.browser import BrowserPolicy

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, CDPSession, Page, Playwright

SNAPSHOT_LINES = 2000
# Sets the session's ref attribute on the element a ref names, so that Playwright can act on it.
TAG_ELEMENT = "function(attribute, ref) { this.setAttribute(attribute, ref); }"
Redact = Callable[[str], str]


class SessionFailed(Exception):
    """The action did not complete (time cap, crash, no such element); the message says which."""


class SessionEnded(SessionFailed):
    """The browser or its page is gone (a crash past the memory cap, a closed sandbox)."""


@dataclass(frozen=True)
class PageText:
    url: str
    title: str
    status: int | None
    text: str


@dataclass
class SessionState:
    pages: int = 0
    refs: RefBook = field(default_factory=RefBook)
    last_used: float = field(default_factory=time.monotonic)
    crashed: bool = False


class BrowserSession:
    """A page of one session; `policy` caps it."""

    def __init__(self, browser: Browser, context: BrowserContext, page: Page, policy: BrowserPolicy) -> None:
        self._browser = browser
        self._context = context
        self._page = page
        self._policy = policy
        self._ref_attribute = f"data-fl-{secrets.token_hex(4)}"
        self._cdp: CDPSession | None = None
        self.state = SessionState()
        page.on("crash", lambda _: self._crashed())

    @classmethod
    async def connect(cls, driver: Playwright, devtools_url: str, policy: BrowserPolicy) -> BrowserSession:
        from playwright.async_api import Error as PlaywrightError

        width, height = (int(part) for part in policy.window.split("x"))
        try:
            browser = await driver.chromium.connect_over_cdp(devtools_url, timeout=policy.timeout_s * 1000)
            context = await browser.new_context(viewport={"width": width, "height": height})
            page = await context.new_page()
        except PlaywrightError as failed:
            raise SessionFailed(f"cannot drive the browser sandbox: {_first_line(failed)}") from None
        page.set_default_timeout(policy.timeout_s * 1000)
        return cls(browser, context, page, policy)

    @property
    def url(self) -> str:
        return str(self._page.url)

    @property
    def idle_timeout_s(self) -> float:
        return self._policy.idle_timeout_s

    async def navigate(self, url: str) -> PageText:
        if self.state.pages >= self._policy.pages_per_session:
            raise SessionEnded(
                f"tools.browser.pages_per_session: this session opened {self.state.pages} pages; "
                "start another session"
            )
        self.state.pages += 1
        response = await self._act("navigate", self._page.goto(url, wait_until="load"))
        return await self.read(response.status if response is not None else None)

    async def read(self, status: int | None = None) -> PageText:
        title = await self._act("read", self._page.title())
        text = await self._act(
            "read", self._page.evaluate("() => document.body ? document.body.innerText : ''")
        )
        return PageText(self._page.url, str(title), status, str(text)[: self._policy.text_chars])

    async def snapshot(self) -> str:
        cdp = await self._devtools()
        answer = await self._act("snapshot", cdp.send("Accessibility.getFullAXTree"))
        tree = AxTree.model_validate(answer)
        passwords = await self._password_fields(cdp, tree.fields())
        found = render(tree, self.state.refs, passwords, SNAPSHOT_LINES)
        lines = [f"page: {self._page.url}", f"title: {await self._page.title()}", *found]
        return "\n".join(lines)[: self._policy.text_chars]

    async def click(self, ref: str) -> None:
        element = await self._element(ref)
        await self._act("click", element.click())
        await self._settle()

    async def type(self, ref: str, text: str, submit: bool) -> None:
        element = await self._element(ref)
        await self._act("type", element.fill(text))
        if submit:
            await self._act("type", element.press("Enter"))
            await self._settle()

    async def screenshot(self) -> bytes:
        png = await self._act("screenshot", self._page.screenshot(type="png"))
        return bytes(png)

    async def evaluate(self, expression: str) -> str:
        result = await self._act("evaluate", self._page.evaluate(expression))
        return json.dumps(result, ensure_ascii=False, default=str)

    async def close(self) -> None:
        from playwright.async_api import Error as PlaywrightError

        with contextlib.suppress(PlaywrightError):
            await self._context.close()
            await self._browser.close()

    async def _devtools(self) -> CDPSession:
        if self._cdp is None:
            self._cdp = await self._act("snapshot", self._context.new_cdp_session(self._page))
        return self._cdp

    async def _password_fields(self, cdp: CDPSession, fields: list[int]) -> set[int]:
        described = await self._act(
            "snapshot",
            asyncio.gather(*(cdp.send("DOM.describeNode", {"backendNodeId": node}) for node in fields)),
        )
        return {node for node, answer in zip(fields, described, strict=True) if is_password(answer)}

    async def _element(self, ref: str) -> Any:
        """The element a snapshot's ref names, marked with the session's attribute for Playwright."""
        if not (ref.startswith(REF_PREFIX) and ref[1:].isdigit()):
            raise SessionFailed(f"ref {ref[:40]!r}: give a ref from browser_snapshot, such as e3")
        node = self.state.refs.node_of(ref)
        if node is None:
            raise SessionFailed(f"ref {ref}: no such ref in this session; take a new browser_snapshot")
        cdp = await self._devtools()
        try:
            resolved = await self._act("act", cdp.send("DOM.resolveNode", {"backendNodeId": node}))
        except SessionEnded:
            raise
        except SessionFailed:
            raise SessionFailed(
                f"ref {ref}: that element is no longer on the page; take a new browser_snapshot"
            ) from None
        await self._act(
            "act",
            cdp.send(
                "Runtime.callFunctionOn",
                {
                    "objectId": resolved["object"]["objectId"],
                    "functionDeclaration": TAG_ELEMENT,
                    "arguments": [{"value": self._ref_attribute}, {"value": ref}],
                },
            ),
        )
        return self._page.locator(f"[{self._ref_attribute}='{ref}']")

    async def _settle(self) -> None:
        """A click or a submit may start a navigation: let it load, within the time cap."""
        from playwright.async_api import Error as PlaywrightError

        with contextlib.suppress(PlaywrightError):
            await self._page.wait_for_load_state("load", timeout=self._policy.timeout_s * 1000)

    async def _act(self, action: str, pending: Any) -> Any:
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        self.state.last_used = time.monotonic()
        try:
            return await pending
        except PlaywrightTimeout:
            raise SessionFailed(
                f"{action}: not done within tools.browser.timeout_s ({self._policy.timeout_s:g} s)"
            ) from None
        except PlaywrightError as failed:
            if self.state.crashed or "crash" in str(failed).lower() or "closed" in str(failed).lower():
                self.state.crashed = True
                raise SessionEnded(
                    f"{action}: the page crashed or the browser ended (a page past "
                    f"tools.browser.memory {self._policy.memory} does); the session is closed"
                ) from None
            raise SessionFailed(f"{action}: {_first_line(failed)}") from None
        finally:
            self.state.last_used = time.monotonic()

    def _crashed(self) -> None:
        self.state.crashed = True


async def start_driver() -> Playwright:
    """A Playwright driver (its node process), started at a fleet's first browser session."""
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        raise SessionFailed(
            "the browser needs the playwright package on the orchestrator's host: "
            "pip install 'flotilla[browser]'"
        ) from None
    return await async_playwright().start()


def _first_line(failed: BaseException) -> str:
    return (str(failed).strip().splitlines() or [type(failed).__name__])[0][:300]

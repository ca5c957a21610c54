"""The browser tools' names, arguments and descriptions, as the agent's model sees them."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

BROWSER_NAVIGATE = "browser_navigate"
BROWSER_SNAPSHOT = "browser_snapshot"
BROWSER_CLICK = "browser_click"
BROWSER_TYPE = "browser_type"
BROWSER_SCREENSHOT = "browser_screenshot"
BROWSER_EVALUATE = "browser_evaluate"
BROWSER_CLOSE = "browser_close"
SESSION_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
SCREENSHOT_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    session: str = Field(
        default="main",
        pattern=SESSION_NAME.pattern,
        description="Session name within the current item (default main); each is a browser of its own",
    )


class NavigateArguments(_Arguments):
    url: str = Field(
        max_length=4000, description="http:// or https:// address allowed by your tools.http policy"
    )


class SnapshotArguments(_Arguments):
    pass


class ClickArguments(_Arguments):
    ref: str = Field(max_length=40, description="The element's ref from browser_snapshot, e.g. e3")


class TypeArguments(_Arguments):
    ref: str = Field(max_length=40, description="The field's ref from browser_snapshot, e.g. e5")
    text: str = Field(
        max_length=10_000,
        description="Text to put in the field; write credentials as {{secret:NAME}} (filled in by the "
        "orchestrator, never shown back)",
    )
    submit: bool = Field(default=False, description="Press Enter afterwards (submits most forms)")


class ScreenshotArguments(_Arguments):
    name: str | None = Field(
        default=None,
        pattern=SCREENSHOT_NAME.pattern,
        description="File name without .png, saved as screenshots/<name>.png in your workspace; a new "
        "screenshot of the same name is a new version of that file (default: the current item's id)",
    )


class EvaluateArguments(_Arguments):
    expression: str = Field(
        max_length=20_000, description="A JavaScript expression or function run in the page; its JSON result"
    )


class CloseArguments(_Arguments):
    pass


TOOLS: dict[str, tuple[type[_Arguments], str]] = {
    BROWSER_NAVIGATE: (
        NavigateArguments,
        "Open a URL in your browser (a sandbox; every request it makes is held to your tools.http "
        "policy) and return the page's title and readable text, scripts run",
    ),
    BROWSER_SNAPSHOT: (
        SnapshotArguments,
        "The current page's headings, text and actionable elements, each element with a ref (e3) "
        "for browser_click and browser_type",
    ),
    BROWSER_CLICK: (ClickArguments, "Click an element of the current page by its ref"),
    BROWSER_TYPE: (
        TypeArguments,
        "Fill a field of the current page by its ref; {{secret:NAME}} handles are filled in by the "
        "orchestrator and never shown",
    ),
    BROWSER_SCREENSHOT: (
        ScreenshotArguments,
        "Take a PNG screenshot of the current page, saved in your workspace as screenshots/<name>.png "
        "(a new version each time) where you and the operator can list it",
    ),
    BROWSER_EVALUATE: (EvaluateArguments, "Run JavaScript in the current page and return its JSON result"),
    BROWSER_CLOSE: (
        CloseArguments,
        "Close a browser session (it also closes when idle or when the item ends)",
    ),
}


def input_schema(name: str) -> dict[str, Any]:
    return TOOLS[name][0].model_json_schema()


def parse(name: str, arguments: dict[str, Any]) -> _Arguments | str:
    """The arguments, or a message naming each problem."""
    try:
        return TOOLS[name][0].model_validate(arguments)
    except ValidationError as bad:
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in bad.errors())

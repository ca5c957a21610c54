"""What the agent receives of a response: status, selected headers and the body as text (an HTML
page optionally reduced to its readable text), with every secret value replaced by its handle."""

from __future__ import annotations

import logging
from collections.abc import Callable

from orchestrator.egress.fetch import Fetched

log = logging.getLogger(__name__)

SHOWN_HEADERS = (
    "content-type",
    "content-length",
    "content-language",
    "location",
    "date",
    "last-modified",
    "etag",
    "cache-control",
    "retry-after",
    "link",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
)
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/rss", "application/atom")
TEXT_SUFFIXES = ("+json", "+xml")


def render_answer(fetched: Fetched, readable: bool, redact: Callable[[str], str]) -> str:
    lines = [f"HTTP {fetched.status} {fetched.reason}".rstrip()]
    lines += [f"{name}: {value}" for name, value in fetched.headers if name.lower() in SHOWN_HEADERS]
    if fetched.redirects:
        lines.append(f"redirected: {' -> '.join(fetched.redirects)}")
    content_type = _content_type(fetched)
    lines.append("")
    lines.append(_body_text(fetched, content_type, readable))
    if fetched.cut:
        lines.append(f"[body cut at {len(fetched.body)} bytes: tools.http.max_response_bytes]")
    return redact("\n".join(lines))


def _content_type(fetched: Fetched) -> str:
    for name, value in fetched.headers:
        if name.lower() == "content-type":
            return value.split(";", 1)[0].strip().lower()
    return ""


def _charset(fetched: Fetched) -> str:
    for name, value in fetched.headers:
        if name.lower() == "content-type" and "charset=" in value.lower():
            return value.lower().split("charset=", 1)[1].split(";", 1)[0].strip().strip('"') or "utf-8"
    return "utf-8"


def _body_text(fetched: Fetched, content_type: str, readable: bool) -> str:
    if not fetched.body:
        return "(empty body)"
    is_text = not content_type or content_type.startswith(TEXT_TYPES) or content_type.endswith(TEXT_SUFFIXES)
    if not is_text:
        return f"[{len(fetched.body)} bytes of {content_type} not shown]"
    try:
        text = fetched.body.decode(_charset(fetched), errors="replace")
    except LookupError:
        text = fetched.body.decode("utf-8", errors="replace")
    if readable and content_type in {"text/html", "application/xhtml+xml"}:
        return readable_text(text)
    return text


def readable_text(html: str) -> str:
    """The main text of an HTML page (trafilatura), or the page itself when none is found."""
    try:
        import trafilatura
    except ImportError:
        return "[readable text needs trafilatura: pip install 'flotilla[orchestrator]']\n" + html
    extracted = trafilatura.extract(html, include_links=True, include_tables=True)
    return extracted if extracted else html

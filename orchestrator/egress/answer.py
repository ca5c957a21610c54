"""What the agent receives of a response: status, selected headers and the body as text (an HTML
page optionally reduced to its readable text), with every secret value replaced by its handle
before the body is cut to the policy's cap. No header tells a length: a `content-length` would
give away the length of a secret the server echoed."""

from __future__ import annotations

import logging

from orchestrator.egress.fetch import Fetched
from orchestrator.state.redaction import Redaction

log = logging.getLogger(__name__)

SHOWN_HEADERS = (
    "content-type",
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


def render_answer(fetched: Fetched, readable: bool, redaction: Redaction, cap: int) -> str:
    """The answer as the agent reads it; `cap` is the policy's max_response_bytes."""
    lines = [f"HTTP {fetched.status} {fetched.reason}".rstrip()]
    lines += [f"{name}: {value}" for name, value in fetched.headers if name.lower() in SHOWN_HEADERS]
    if fetched.redirects:
        lines.append(f"redirected: {' -> '.join(fetched.redirects)}")
    lines.append("")
    head = redaction.redact("\n".join(lines))
    body = redaction.cut(_body_text(fetched, _content_type(fetched), readable), cap, cut_after=fetched.cut)
    if fetched.cut:
        body += f"\n[body cut at {cap} bytes: tools.http.max_response_bytes]"
    return f"{head}\n{body}"


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
        # No size: the size of a body that echoes a secret would tell the secret's length.
        return f"[a body of {content_type} not shown]"
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

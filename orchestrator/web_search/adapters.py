"""Each provider's request and answer: the URL to ask for a query, and its results read as
title, URL and snippet. Answers are untrusted: anything missing or malformed is skipped."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from pydantic import BaseModel

from orchestrator.config.browser import SearchKind, SearchProvider

FIELD_CHARS = {"title": 200, "url": 2000, "snippet": 500}


class SearchResult(BaseModel):
    title: str
    url: str
    snippet: str


class AnswerUnreadable(Exception):
    pass


def search_url(provider: SearchProvider, query: str) -> str:
    """The provider's URL with the query (and the parameters its API needs) added."""
    extra: dict[str, str | int] = {"q": query}
    if provider.kind == "searxng":
        extra["format"] = "json"
    elif provider.kind == "brave":
        extra["count"] = provider.results
    parts = urlsplit(provider.url)
    query_string = "&".join(filter(None, [parts.query, urlencode(extra)]))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query_string, ""))


def read_results(kind: SearchKind, body: bytes, most: int) -> list[SearchResult]:
    try:
        answer = json.loads(body)
    except (ValueError, UnicodeDecodeError) as bad:
        raise AnswerUnreadable(f"the provider's answer is not JSON: {str(bad)[:100]}") from None
    if not isinstance(answer, dict):
        raise AnswerUnreadable("the provider's answer is not a JSON object")
    entries, fields = READERS[kind](answer)
    found = []
    for entry in entries if isinstance(entries, list) else []:
        result = _result(entry, fields)
        if result is not None:
            found.append(result)
        if len(found) >= most:
            break
    return found


def _result(entry: Any, fields: tuple[str, str, str]) -> SearchResult | None:
    if not isinstance(entry, dict):
        return None
    title, url, snippet = (entry.get(name) for name in fields)
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    return SearchResult(
        title=_text(title, "title"), url=url[: FIELD_CHARS["url"]], snippet=_text(snippet, "snippet")
    )


def _text(value: Any, field: str) -> str:
    return " ".join(value.split())[: FIELD_CHARS[field]] if isinstance(value, str) else ""


READERS: dict[SearchKind, Callable[[dict[str, Any]], tuple[Any, tuple[str, str, str]]]] = {
    "searxng": lambda answer: (answer.get("results"), ("title", "url", "content")),
    "brave": lambda answer: (
        (answer.get("web") or {}).get("results") if isinstance(answer.get("web"), dict) else None,
        ("title", "url", "description"),
    ),
    "json": lambda answer: (answer.get("results"), ("title", "url", "snippet")),
}

"""Keyword search for scripts written without spaces (Chinese, Japanese, Korean).

FTS5's `unicode61` tokenizer takes a whole run of such characters as one word, so "用户对花生
过敏" is found by nothing but that exact run. The text given to the keyword index therefore
has each such run replaced by its single characters and its overlapping pairs of characters
("花 生 花生 ..."), and a query's runs by their pairs (a single character stays itself): most
Chinese words are two characters long, which an FTS5 `trigram` tokenizer (three at least)
would miss. Text in other scripts passes unchanged, so each fact is indexed by the rule of the
script it is written in, in the one index, and a query in one script meets facts in it.
"""

from __future__ import annotations

import re

_SPACELESS = re.compile(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f]+"
)


def has_spaceless(text: str) -> bool:
    return _SPACELESS.search(text) is not None


def _pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


def index_text(text: str) -> str:
    """The text as the keyword index stores it: spaceless runs as characters and pairs."""
    return _SPACELESS.sub(lambda run: " " + " ".join([*run.group(0), *_pairs(run.group(0))]) + " ", text)


def query_text(text: str) -> str:
    """A query as the keyword index reads it: spaceless runs as their pairs."""
    return _SPACELESS.sub(lambda run: " " + " ".join(_pairs(run.group(0))) + " ", text)

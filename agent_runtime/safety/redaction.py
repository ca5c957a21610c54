"""Credentials never reach the agent's storage verbatim: text that looks like one is redacted.

`redact(text)` replaces every credential-shaped span with a visible marker such as
`[REDACTED api-key]` and says which kinds it found, so the caller can tell the model. It runs
before a turn reaches the history log, the context state or the model, and before a fact,
an episode or a daily-log line is stored.

The detectors are regular expressions over prose, not over source code:
- provider-shaped keys and tokens (`sk-...`, `sk_live_...`, `ghp_...`, `xoxb-...`, `AKIA...`,
  `AIza...`, JSON Web Tokens, `Bearer ...`), which are secrets wherever they appear;
- PEM private key blocks;
- the password in a URL (`https://user:pass@host`);
- a value introduced by a credential word ("password: ...", "api key is ...", "token=...") when
  the value looks like a secret (it has a digit or a symbol, or is long): "the password is
  required" stays as it is, "the password is hunter2!" does not;
- long random-looking strings (32+ characters mixing upper case, lower case and digits, with
  high entropy). Lowercase hexadecimal (commit hashes, UUIDs) is not caught by this one.
Redacting is idempotent: a marker is never itself taken for a secret. A secret handle
(`{{secret:NAME}}`, which the orchestrator fills in when it sends) names a secret without holding
it, and is kept as it is.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

MARKER = "[REDACTED {kind}]"


@dataclass(frozen=True)
class Redacted:
    text: str
    kinds: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        return bool(self.kinds)


def _marker(kind: str) -> str:
    return MARKER.format(kind=kind)


# (kind, pattern): the whole match is the secret.
_SHAPED: list[tuple[str, re.Pattern[str]]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    ("api-key", re.compile(r"\b(?:sk|pk|rk)[-_][A-Za-z0-9][A-Za-z0-9_-]{14,}")),
    ("token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}")),
    ("token", re.compile(r"\bglpat-[A-Za-z0-9_-]{16,}")),
    ("token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("api-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{30,}")),
    ("token", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("token", re.compile(r"(?<=\bBearer )[A-Za-z0-9._~+/=-]{16,}", re.I)),
]
_URL_PASSWORD = re.compile(r"(?<=://)(?P<user>[^\s:/@]+):(?P<secret>[^\s/@]+)(?=@)")
_KEYWORD_VALUE = re.compile(
    r"\b(?P<word>pass(?:word|wd|phrase)?|pwd|pin|secret(?:[ _-]?key)?|client[ _-]?secret|"
    r"api[ _-]?key|access[ _-]?key|secret[ _-]?access[ _-]?key|(?:access|auth|api|bearer|refresh)?[ _-]?token|"
    r"credentials?)"
    r"(?P<sep>\s*(?:[:=]|\bis\b|\bwas\b|\bof\b)\s*|\s+)[\"'`]?(?P<secret>[^\s\"'`,;]{4,})",
    re.I,
)
_LONG_RANDOM = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_=-]{32,}(?![A-Za-z0-9+/_-])")
_PLAIN_WORD = re.compile(r"^[A-Za-z]+[.!?]?$")
MIN_ENTROPY_BITS = 4.0


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def _looks_random(candidate: str) -> bool:
    return (
        any(c.isupper() for c in candidate)
        and any(c.islower() for c in candidate)
        and any(c.isdigit() for c in candidate)
        and _entropy(candidate) >= MIN_ENTROPY_BITS
    )


def _looks_like_a_secret_value(value: str, separator: str) -> bool:
    """Whether the value after a credential word is the credential.

    After "password:" or "token=" (an assignment), any value is. After "password is", one that
    is not a plain word ("required", "strong"). After a bare space ("pin 4512"), one with a
    digit, or a long one that is not a plain word."""
    if value.startswith("[REDACTED"):
        return False
    if ":" in separator or "=" in separator:
        return True
    plain = _PLAIN_WORD.match(value) is not None
    if separator.strip():
        return not plain or len(value) >= 16
    return any(ch.isdigit() for ch in value) or (not plain and len(value) >= 16)


SECRET_HANDLE = re.compile(r"\{\{\s*secret:[A-Za-z0-9_]*\s*\}\}")


def redact(text: str) -> Redacted:
    """The text with every credential-shaped span replaced by a marker, and the kinds found."""
    if not text:
        return Redacted(text)
    if "{{" not in text or not SECRET_HANDLE.search(text):
        return _redact_between_handles(text)
    handles = SECRET_HANDLE.findall(text)
    pieces = [_redact_between_handles(piece) for piece in SECRET_HANDLE.split(text)]
    joined = pieces[0].text + "".join(
        handle + piece.text for handle, piece in zip(handles, pieces[1:], strict=True)
    )
    return Redacted(joined, tuple(dict.fromkeys(kind for piece in pieces for kind in piece.kinds)))


def _redact_between_handles(text: str) -> Redacted:
    if not text:
        return Redacted(text)
    kinds: list[str] = []

    def replace_with(kind: str) -> str:
        kinds.append(kind)
        return _marker(kind)

    for kind, pattern in _SHAPED:
        text = pattern.sub(lambda _m, kind=kind: replace_with(kind), text)  # type: ignore[misc]
    text = _URL_PASSWORD.sub(lambda m: f"{m['user']}:{replace_with('password')}", text)

    def keyword_value(match: re.Match[str]) -> str:
        if not _looks_like_a_secret_value(match["secret"], match["sep"]):
            return match.group(0)
        word = match["word"].lower().strip(" _-")
        kind = "password" if word.startswith(("pass", "pwd", "pin")) else "secret"
        if kind != "password" and match["secret"].isdigit():
            return match.group(0)  # "token 8000", "key 2": a count, not a credential
        return f"{match['word']}{match['sep']}{replace_with(kind)}"

    text = _KEYWORD_VALUE.sub(keyword_value, text)
    text = _LONG_RANDOM.sub(
        lambda m: replace_with("secret") if _looks_random(m.group(0)) else m.group(0), text
    )
    return Redacted(text, tuple(dict.fromkeys(kinds)))


def redacted_note(kinds: tuple[str, ...]) -> str:
    """What the model is told when its text lost a secret."""
    # Worded so that the note itself holds nothing the detectors would take for a secret.
    return (
        f"redacted before saving ({', '.join(kinds)}): secrets never go into memory, history or "
        "logs, so leave them out of what you save"
    )

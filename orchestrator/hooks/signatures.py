"""Checking a hook request's signature: pure functions over the secret, the headers and the body.

`github`: `X-Hub-Signature-256: sha256=HEX`, the HMAC-SHA256 of the raw body under the secret.
`hmac`: HEX (optionally `sha256=HEX`) in the hook's header, the HMAC-SHA256 of `TIMESTAMP.BODY`,
with the Unix time in the timestamp header; a timestamp outside the replay window is refused.
Comparisons take constant time.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from orchestrator.config.hooks import HookConfig

GITHUB_SIGNATURE = "x-hub-signature-256"
GITHUB_DELIVERY = "x-github-delivery"
GITHUB_EVENT = "x-github-event"


@dataclass(frozen=True)
class Verified:
    """A request whose signature holds. `replay_key` identifies it for replay refusal."""

    replay_keys: tuple[str, ...]
    delivery: str | None = None
    event: str | None = None


class SignatureRefused(Exception):
    """The signature is missing, malformed or wrong. The message says which, never the secret."""


class StaleRequest(Exception):
    """The signed timestamp is outside the replay window."""


def sign(secret: str, message: bytes) -> str:
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def github_signature(secret: str, body: bytes) -> str:
    """The header value GitHub sends for this body (also what tests and docs sign with)."""
    return "sha256=" + sign(secret, body)


def hmac_signature(secret: str, timestamp: int, body: bytes) -> str:
    return sign(secret, str(timestamp).encode() + b"." + body)


def verify(hook: HookConfig, secret: str, headers: Mapping[str, str], body: bytes, now: float) -> Verified:
    """The verified request, or SignatureRefused / StaleRequest. `headers` have lowercase names."""
    if hook.signature == "github":
        return _verify_github(secret, headers, body)
    return _verify_hmac(hook, secret, headers, body, now)


def _matches(given: str, expected_hex: str) -> bool:
    value = given.strip().removeprefix("sha256=").lower()
    return hmac.compare_digest(value.encode(), expected_hex.encode())


def _verify_github(secret: str, headers: Mapping[str, str], body: bytes) -> Verified:
    given = headers.get(GITHUB_SIGNATURE)
    if not given:
        raise SignatureRefused("no X-Hub-Signature-256 header")
    if not given.startswith("sha256="):
        raise SignatureRefused("X-Hub-Signature-256 is not of the form sha256=HEX")
    digest = sign(secret, body)
    if not _matches(given, digest):
        raise SignatureRefused("X-Hub-Signature-256 does not match the body")
    delivery = headers.get(GITHUB_DELIVERY, "").strip()[:100] or None
    keys = (f"body:{digest}",) + ((f"delivery:{delivery}",) if delivery else ())
    return Verified(
        replay_keys=keys, delivery=delivery, event=headers.get(GITHUB_EVENT, "").strip()[:100] or None
    )


def _verify_hmac(
    hook: HookConfig, secret: str, headers: Mapping[str, str], body: bytes, now: float
) -> Verified:
    given = headers.get(hook.header.lower())
    if not given:
        raise SignatureRefused(f"no {hook.header} header")
    stamp_text = headers.get(hook.timestamp_header.lower(), "").strip()
    if not stamp_text.isdigit() or len(stamp_text) > 12:
        raise SignatureRefused(f"{hook.timestamp_header} is missing or not a Unix time in seconds")
    stamp = int(stamp_text)
    digest = hmac_signature(secret, stamp, body)
    if not _matches(given, digest):
        raise SignatureRefused(f"{hook.header} does not match the timestamp and body")
    if abs(now - stamp) > hook.window_s:
        raise StaleRequest(
            f"{hook.timestamp_header} is {abs(now - stamp):.0f}s from the orchestrator's clock, "
            f"outside the replay window ({hook.replay_window})"
        )
    return Verified(replay_keys=(f"signature:{digest}",))

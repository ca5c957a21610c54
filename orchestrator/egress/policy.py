"""A request's URL and method against the agent's `tools.http` policy. Each refusal names the rule."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from orchestrator.config.egress import DEFAULT_PORTS, AllowedUrl, HttpPolicy


class PolicyRefused(Exception):
    """Outside the policy: the message names the fleet.yaml field that refuses it."""


@dataclass(frozen=True)
class Target:
    """Where one request goes, parsed from its URL."""

    url: str
    scheme: str
    host: str
    port: int
    path: str

    @property
    def origin(self) -> tuple[str, str, int]:
        return (self.scheme, self.host, self.port)


def parse_target(url: str) -> Target:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise PolicyRefused(f"{url}: only http:// and https:// URLs can be requested")
    if "@" in parts.netloc:
        raise PolicyRefused(
            f"{url}: a URL with a user name or password is refused (send credentials as headers)"
        )
    host = parts.hostname
    if not host:
        raise PolicyRefused(f"{url}: the URL has no host")
    try:
        port = parts.port or DEFAULT_PORTS[scheme]
    except ValueError:
        raise PolicyRefused(f"{url}: invalid port") from None
    path = parts.path or "/"
    decoded = unquote(path)
    if "\\" in decoded or any(segment in {".", ".."} for segment in decoded.split("/")):
        raise PolicyRefused(f"{url}: a path with '.' or '..' segments or backslashes is refused")
    return Target(url=url, scheme=scheme, host=host.rstrip("."), port=port, path=path)


def allowed_rule(policy: HttpPolicy, method: str, target: Target) -> AllowedUrl:
    """The allow pattern the request matches; PolicyRefused naming the rule otherwise."""
    if method not in policy.methods:
        allowed = ", ".join(policy.methods) or "none"
        raise PolicyRefused(f"tools.http.methods: {method} is not allowed (allowed: {allowed})")
    for rule in policy.rules():
        pattern = rule.pattern
        if (
            pattern.scheme == target.scheme
            and pattern.matches_host(target.host)
            and pattern.port == target.port
            and pattern.matches_path(target.path)
        ):
            return rule
    allowed = ", ".join(rule.pattern.text for rule in policy.rules()) or "none"
    raise PolicyRefused(f"tools.http.allow: {target.url} matches no allowed URL pattern (allowed: {allowed})")


def private_allowed(rule: AllowedUrl, target: Target) -> bool:
    """allow_private counts only for the exact host a pattern names, never through a wildcard."""
    return rule.allow_private and not rule.pattern.wildcard and rule.pattern.host == target.host

"""URL patterns of tools.http.allow, matched as the orchestrator matches each request."""

from __future__ import annotations

import pytest

from orchestrator.config.egress import HttpPolicy
from orchestrator.egress.policy import PolicyRefused, allowed_rule, parse_target, private_allowed

POLICY = HttpPolicy(
    allow=[
        "https://api.example.com/v1/",
        "https://*.feeds.example/",
        "http://status.example:8080/health",
        {"url": "http://127.0.0.1:18790/", "allow_private": True},
    ]
)


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/v1/repos?page=2",
        "https://API.example.com:443/v1/",
        "https://api.example.com/v1",  # the folder itself
        "https://a.feeds.example/x.xml",
        "https://deep.a.feeds.example/",
        "http://status.example:8080/health",
        "http://status.example:8080/health/db",
        "http://127.0.0.1:18790/data",
    ],
)
def test_allowed(url: str) -> None:
    allowed_rule(POLICY, "GET", parse_target(url))


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://api.example.com/v1/", "matches no allowed"),  # another scheme
        ("https://api.example.com:8443/v1/", "matches no allowed"),  # another port
        ("https://api.example.com/v2/", "matches no allowed"),
        ("https://api.example.com/v1x/", "matches no allowed"),
        ("https://feeds.example/", "matches no allowed"),  # a wildcard needs a subdomain
        ("https://evilfeeds.example/", "matches no allowed"),
        ("https://api.example.com.evil.example/v1/", "matches no allowed"),
        ("http://status.example:8080/healthz", "matches no allowed"),
        ("https://api.example.com/v1/../admin", "'..' segments"),
        ("https://api.example.com/v1/%2E%2E/admin", "'..' segments"),
        ("https://api.example.com/v1/..%5cadmin", "backslashes"),
        ("https://user@api.example.com/v1/", "user name or password"),
        ("ftp://api.example.com/v1/", "only http:// and https://"),
        ("https:///v1/", "has no host"),
    ],
)
def test_refused(url: str, why: str) -> None:
    with pytest.raises(PolicyRefused, match=why):
        allowed_rule(POLICY, "GET", parse_target(url))


def test_private_addresses_only_for_the_exact_host_named() -> None:
    target = parse_target("http://127.0.0.1:18790/data")
    assert private_allowed(allowed_rule(POLICY, "GET", target), target)
    wildcard = parse_target("https://a.feeds.example/")
    assert not private_allowed(allowed_rule(POLICY, "GET", wildcard), wildcard)

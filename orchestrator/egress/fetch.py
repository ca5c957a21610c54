"""One HTTP request sent from the orchestrator host: to the address checked (pinned), following
redirects only after re-checking each against the policy and the address ranges, reading at
most the policy's cap of the body within its time limit."""

from __future__ import annotations

import asyncio
import functools
import ssl
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from urllib.parse import urljoin

import certifi
import httpx

from orchestrator.config.egress import DEFAULT_PORTS, HttpPolicy
from orchestrator.egress.addresses import AddressRefused, IpAddress, ResolveFailed, Resolver, pinned_address
from orchestrator.egress.policy import PolicyRefused, Target, allowed_rule, parse_target, private_allowed

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Headers that carry credentials: never sent on to another origin by a redirect.
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
USER_AGENT = "flotilla-http-request/1"
IDENTITY = frozenset({"", "identity"})
# zlib reads both gzip and zlib framing with 32 added to its window bits.
COMPRESSED = {"gzip": 32 + zlib.MAX_WBITS, "x-gzip": 32 + zlib.MAX_WBITS, "deflate": 32 + zlib.MAX_WBITS}


SendCheck = Callable[["Outgoing", Target], None]
"""Called before each request goes out; raises PolicyRefused to stop it."""


class FetchStopped(Exception):
    """The request got no answer. `sent` counts the requests that went out before it stopped
    (redirects followed, then refused or failed): each counts in the budget."""

    sent = 0


class FetchRefused(FetchStopped):
    """The request (or one of its redirects) is outside the policy or aims at a refused address."""


class FetchFailed(FetchStopped):
    """The request was allowed but did not complete (connection, TLS, time, a body not readable)."""


@dataclass(frozen=True)
class Outgoing:
    """A request as it is sent: secrets already filled in. `secret_headers` are the headers whose
    values held a secret handle; like credentials they are dropped when a redirect changes origin."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None = None
    secret_headers: frozenset[str] = frozenset()


@dataclass
class Fetched:
    """An answer. `body` may run past the cap by the lookahead asked for, so that a secret the
    cap falls inside is still whole when it is redacted; `cut` says the body went past the cap."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    cut: bool
    host: str
    redirects: list[str] = field(default_factory=list)


async def fetch(
    policy: HttpPolicy,
    request: Outgoing,
    resolver: Resolver,
    timeout_s: float,
    *,
    lookahead: int = 0,
    check: SendCheck | None = None,
) -> Fetched:
    """Send `request` under `policy`, reading up to `lookahead` bytes past the body's cap;
    `check` sees each request (redirects included) before it goes out and may refuse it.
    FetchRefused or FetchFailed say why it was not answered."""
    sent: list[str] = []  # the host of each request that went out
    try:
        return await _fetch(policy, request, resolver, timeout_s, sent, _Reading(lookahead, check))
    except FetchStopped as stopped:
        stopped.sent = len(sent)
        raise


@dataclass(frozen=True)
class _Reading:
    lookahead: int
    check: SendCheck | None


async def _fetch(
    policy: HttpPolicy,
    request: Outgoing,
    resolver: Resolver,
    timeout_s: float,
    sent: list[str],
    reading: _Reading,
) -> Fetched:
    try:
        async with asyncio.timeout(timeout_s):
            async with httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,
                timeout=httpx.Timeout(timeout_s),
                verify=verified_tls(),
            ) as client:
                return await _follow(client, policy, request, resolver, sent, reading)
    except TimeoutError:
        raise FetchFailed(f"no complete answer within {timeout_s:g} s") from None
    except (httpx.HTTPError, httpx.StreamError) as failed:
        raise FetchFailed(f"{type(failed).__name__}: {failed}") from None
    except httpx.InvalidURL as invalid:
        raise FetchRefused(f"invalid URL: {invalid}") from None
    except UnicodeEncodeError:
        raise FetchFailed("the request holds characters that cannot be sent (headers are ASCII)") from None
    except (PolicyRefused, AddressRefused) as refused:
        raise FetchRefused(str(refused)) from None
    except ResolveFailed as failed:
        raise FetchFailed(str(failed)) from None


@functools.cache
def verified_tls() -> ssl.SSLContext:
    """Certificates checked against certifi's authorities; loaded once (some 40 ms each time)."""
    return ssl.create_default_context(cafile=certifi.where())


async def _follow(
    client: httpx.AsyncClient,
    policy: HttpPolicy,
    request: Outgoing,
    resolver: Resolver,
    sent: list[str],
    reading: _Reading,
) -> Fetched:
    redirects: list[str] = []
    while True:
        target = parse_target(request.url)
        rule = allowed_rule(policy, request.method, target)
        address = await pinned_address(
            target.host, target.port, resolver, allow_private=private_allowed(rule, target)
        )
        if reading.check is not None:
            reading.check(request, target)
        sent.append(target.host)
        response = await _send(client, request, target, address)
        location = response.headers.get("location")
        if response.status_code not in REDIRECT_STATUSES or not location:
            try:
                body, cut = await _read_capped(response, policy.response_cap, reading.lookahead)
            finally:
                await response.aclose()
            return Fetched(
                status=response.status_code,
                reason=response.reason_phrase,
                headers=list(response.headers.items()),
                body=body,
                cut=cut,
                host=target.host,
                redirects=redirects,
            )
        await response.aclose()
        if len(redirects) >= policy.max_redirects:
            raise PolicyRefused(
                f"tools.http.max_redirects: more than {policy.max_redirects} redirects (last to {location})"
            )
        request = _redirected(request, target, response.status_code, urljoin(request.url, location))
        redirects.append(request.url)


async def _send(
    client: httpx.AsyncClient, request: Outgoing, target: Target, address: IpAddress
) -> httpx.Response:
    # The connection goes to the address checked; Host and TLS (SNI, certificate) keep the name.
    url = httpx.URL(request.url).copy_with(host=str(address))
    default_port = DEFAULT_PORTS[target.scheme] == target.port
    host_header = target.host if ":" not in target.host else f"[{target.host}]"
    headers = {"user-agent": USER_AGENT, "accept-encoding": "gzip, deflate", **request.headers}
    headers["host"] = host_header if default_port else f"{host_header}:{target.port}"
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    built = client.build_request(
        request.method, url, headers=headers, content=request.body, extensions=extensions
    )
    return await client.send(built, stream=True)


async def _read_capped(response: httpx.Response, cap: int, lookahead: int) -> tuple[bytes, bool]:
    """At most `cap` bytes of the decoded body (plus up to `lookahead` more when there are more),
    and whether there was more than `cap`. Decoding is bounded too: a small compressed body that
    would expand to gigabytes stops at the cap."""
    limit = cap + lookahead
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    decoder = None
    if encoding not in IDENTITY:
        if encoding not in COMPRESSED:
            raise FetchFailed(f"the response's content-encoding {encoding[:40]!r} cannot be read")
        decoder = zlib.decompressobj(COMPRESSED[encoding])
    parts: list[bytes] = []
    size = 0
    async for raw in response.aiter_raw():
        try:
            chunk = decoder.decompress(raw, limit + 1 - size) if decoder is not None else raw
        except zlib.error as bad:
            raise FetchFailed(f"the response's {encoding} body is damaged: {bad}") from None
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(parts)[:limit], True
    body = b"".join(parts)
    return body, len(body) > cap


def _redirected(request: Outgoing, was: Target, status: int, url: str) -> Outgoing:
    method = request.method
    body = request.body
    if status == 303 or (status in {301, 302} and method == "POST"):
        method, body = ("HEAD" if method == "HEAD" else "GET"), None
    headers = dict(request.headers)
    try:
        same_origin = parse_target(url).origin == was.origin
    except PolicyRefused:
        same_origin = False  # refused on the next round, with its reason
    if not same_origin:
        dropped = CREDENTIAL_HEADERS | {name.lower() for name in request.secret_headers}
        headers = {name: value for name, value in headers.items() if name.lower() not in dropped}
    if body is None:
        headers = {name: value for name, value in headers.items() if name.lower() != "content-type"}
    return replace(request, method=method, url=url, headers=headers, body=body)

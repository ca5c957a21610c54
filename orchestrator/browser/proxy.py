"""The egress proxy of one browser sandbox: every request a page makes arrives here and goes out
only under the agent's `tools.http` policy, as `http_request` would send it.

Each request is checked for its method, scheme, host, port and path against the allow patterns;
the name is resolved and every address checked (private ranges refused unless the pattern allows
that exact host), and the request goes to the one address checked, one request per connection:
the answer says `Connection: close`, and the proxy closes the connection after it.
HTTPS: a CONNECT tunnel is accepted only for an allowed host and port. With an `Interception` (the
sessions' setting) the proxy ends the page's TLS itself, with a key only the sandbox's Chromium
accepts, checks the one request inside like a plain one, and sends it on over TLS of its own,
the site's certificate verified as `http_request` verifies it. Without one, the tunnel is passed
through blind (host and port checked, method and path unseen). A redirect is the browser's next
request, so it is checked like any other. Each request that leaves counts one against the daily
budget. Only the sandbox's own address may use the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestrator.config.egress import AllowedUrl, HttpPolicy
from orchestrator.egress.addresses import AddressRefused, ResolveFailed, Resolver, pinned_address
from orchestrator.egress.budget import BudgetSpent
from orchestrator.egress.fetch import verified_tls
from orchestrator.egress.policy import PolicyRefused, Target, allowed_rule, parse_target, private_allowed

if TYPE_CHECKING:
    # Made by the sessions, which load `cryptography` (the browser extra) only when one opens.
    from orchestrator.browser.interception import Interception

log = logging.getLogger(__name__)

HEAD_BYTES = 64 * 1024
CHUNK = 64 * 1024
HEAD_TIMEOUT_S = 15.0
CLOSE_WAIT_S = 2.0
LOG_KEPT = 1000
# A tunnel carries many responses (keep-alive, HTTP/2): its cap is this many response caps.
TUNNEL_RESPONSES = 16
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authorization", "proxy-connection", "te", "trailer", "upgrade"}
)
# Request headers not passed on: hop-by-hop ones, `host` (set from the URL checked, so that a page
# cannot name another site of the same address) and `expect` (the body is read before sending).
NOT_FORWARDED = HOP_BY_HOP | {"host", "expect"}
# Answer headers replaced by `Connection: close`: the proxy serves one request a connection.
ANSWER_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection"})
RefusalHook = Callable[["ProxiedRequest"], None]
Admit = Callable[[], Awaitable[None]]


class ProxyRefused(Exception):
    """Outside the policy; the message names the rule."""


@dataclass(frozen=True)
class ProxiedRequest:
    """One request (or tunnel) as the proxy saw it: refused says by which rule."""

    method: str
    url: str
    host: str
    refused: str = ""
    bytes: int = 0


@dataclass
class ProxyLog:
    """What went through the proxy since the last `drain`: the records of the session's actions.
    A page that keeps requesting between two actions fills it to LOG_KEPT; the rest are counted."""

    requests: list[ProxiedRequest] = field(default_factory=list)
    uncounted: int = 0

    def add(self, request: ProxiedRequest) -> None:
        if len(self.requests) < LOG_KEPT:
            self.requests.append(request)
        else:
            self.uncounted += 1

    def drain(self) -> list[ProxiedRequest]:
        taken, self.requests, self.uncounted = self.requests, [], 0
        return taken


class EgressProxy:
    """An HTTP proxy that applies `policy` to each request of one client address; connections
    from any other address are closed unread."""

    def __init__(
        self,
        policy: HttpPolicy,
        resolver: Resolver,
        admit: Admit,
        *,
        client: str = "",
        record: ProxyLog,
        interception: Interception | None = None,
        upstream_tls: ssl.SSLContext | None = None,
    ) -> None:
        self._policy = policy
        self._interception = interception
        self._upstream_tls = upstream_tls or verified_tls()
        self._resolver = resolver
        self._admit = admit
        self._client = client
        self._record = record
        self._server: asyncio.Server | None = None
        self.port = 0
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int = 0) -> int:
        """Listen on host:port (0: any free port); the port listened on."""
        self._server = await asyncio.start_server(self._accept, host=host, port=port)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    def serve_only(self, client: str) -> None:
        """Serve `client` (the sandbox's address) and nobody else; before this, nobody is served."""
        self._client = client

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._serve(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            if not self._client or not peer or peer[0] != self._client:
                return
            head = await _read_head(reader)
            if head is None:
                return
            method, target, headers = head
            if method == "CONNECT":
                await self._tunnel(target, reader, writer)
            else:
                await self._forward(method, target, headers, reader, writer)
        except (OSError, asyncio.IncompleteReadError, TimeoutError):
            pass
        finally:
            await _close(writer)

    async def _tunnel(
        self, authority: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        url = f"https://{authority}/"
        try:
            target = parse_target(url)
            rule = _host_rule(self._policy, target)
            if self._interception is None:
                upstream = await self._open(target, private_allowed(rule, target))
        except (ProxyRefused, PolicyRefused) as refused:
            self._record.add(ProxiedRequest("CONNECT", url[:500], _host_of(authority), str(refused)))
            await _refuse(writer, str(refused))
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        if self._interception is not None:
            await self._intercept(target, reader, writer, self._interception)
            return
        up_reader, up_writer = upstream
        cap = self._policy.response_cap * TUNNEL_RESPONSES
        size = await _pipe_both(reader, writer, up_reader, up_writer, cap, self._policy.timeout_s)
        self._record.add(ProxiedRequest("CONNECT", url, target.host, bytes=size))

    async def _intercept(
        self,
        tunnel: Target,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        interception: Interception,
    ) -> None:
        """End the page's TLS inside the tunnel, then check and forward the one request in it."""
        try:
            await writer.start_tls(
                interception.server_context(tunnel.host), ssl_handshake_timeout=HEAD_TIMEOUT_S
            )
        except (ssl.SSLError, ConnectionError):
            return
        head = await _read_head(reader)
        if head is None:
            return
        method, path, headers = head
        if not path.startswith("/"):
            await _refuse(writer, f"a request inside a tunnel must name a path, not {path[:100]!r}")
            return
        origin = tunnel.url.rstrip("/")
        await self._forward(method, origin + path, headers, reader, writer)

    async def _forward(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        try:
            target = parse_target(url)
            rule = allowed_rule(self._policy, method, target)
            length = _content_length(headers)
            up_reader, up_writer = await self._open(target, private_allowed(rule, target))
        except (ProxyRefused, PolicyRefused) as refused:
            self._record.add(ProxiedRequest(method, url[:500], _host_of(url), str(refused)))
            await _refuse(writer, str(refused))
            return
        try:
            up_writer.write(_origin_head(method, target, headers))
            if length:
                up_writer.write(await reader.readexactly(length))
            await up_writer.drain()
            size = await self._answer(up_reader, writer)
        finally:
            # The answer is complete (or cut): a TLS goodbye to the site would only delay this.
            if target.scheme == "https":
                up_writer.transport.abort()
            else:
                up_writer.close()
        self._record.add(ProxiedRequest(method, url[:500], target.host, bytes=size))

    async def _answer(self, up_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        """The site's answer to the client, its head saying `Connection: close`; the bytes sent."""
        try:
            async with asyncio.timeout(self._policy.timeout_s):
                raw = await up_reader.readuntil(b"\r\n\r\n")
        except (asyncio.LimitOverrunError, asyncio.IncompleteReadError):
            await _bad_gateway(writer, "the site's answer has no readable head")
            return 0
        head = _answer_head(raw)
        writer.write(head)
        cap = max(self._policy.response_cap - len(head), 0)
        return len(head) + await _copy(up_reader, writer, cap, self._policy.timeout_s)

    async def _open(
        self, target: Target, allow_private: bool
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            address = await pinned_address(
                target.host, target.port, self._resolver, allow_private=allow_private
            )
            await self._admit()
        except (AddressRefused, ResolveFailed, BudgetSpent) as refused:
            raise ProxyRefused(str(refused)) from None
        try:
            async with asyncio.timeout(self._policy.timeout_s):
                if target.scheme != "https":
                    return await asyncio.open_connection(str(address), target.port)
                return await asyncio.open_connection(
                    str(address), target.port, ssl=self._upstream_tls, server_hostname=target.host
                )
        except (OSError, TimeoutError) as failed:
            raise ProxyRefused(f"{target.host}:{target.port} could not be reached: {failed}") from None


def _host_rule(policy: HttpPolicy, target: Target) -> AllowedUrl:
    """The allow pattern naming the tunnel's scheme, host and port (its path is not visible)."""
    for rule in policy.rules():
        pattern = rule.pattern
        if (
            pattern.scheme == target.scheme
            and pattern.matches_host(target.host)
            and pattern.port == target.port
        ):
            if "GET" not in policy.methods:
                raise ProxyRefused("tools.http.methods: the browser needs GET")
            return rule
    allowed = ", ".join(rule.pattern.text for rule in policy.rules()) or "none"
    raise ProxyRefused(f"tools.http.allow: {target.url} matches no allowed URL pattern (allowed: {allowed})")


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, str, list[tuple[str, str]]] | None:
    """The request line's method and target, and the headers; None for anything unreadable."""
    try:
        async with asyncio.timeout(HEAD_TIMEOUT_S):
            raw = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.LimitOverrunError, asyncio.IncompleteReadError):
        return None
    if len(raw) > HEAD_BYTES:
        return None
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers.append((name.strip(), value.strip()))
    return parts[0].upper(), parts[1], headers


def _content_length(headers: list[tuple[str, str]]) -> int:
    for name, value in headers:
        lowered = name.lower()
        if lowered == "transfer-encoding":
            raise ProxyRefused("a request body sent in chunks is not forwarded")
        if lowered == "content-length":
            if not value.isdigit() or int(value) > 64 * 1024 * 1024:
                raise ProxyRefused(f"invalid content-length {value[:20]!r}")
            return int(value)
    return 0


def _origin_head(method: str, target: Target, headers: list[tuple[str, str]]) -> bytes:
    """The request as the server gets it: origin-form path, the host checked, no proxy or
    hop-by-hop headers, one request per connection."""
    parts = target.url.split("/", 3)
    path = "/" + (parts[3] if len(parts) > 3 else "")
    kept = [(name, value) for name, value in headers if name.lower() not in NOT_FORWARDED]
    lines = [
        f"{method} {path.split('#', 1)[0]} HTTP/1.1",
        f"Host: {parts[2]}",
        *(f"{n}: {v}" for n, v in kept),
        "Connection: close",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _answer_head(raw: bytes) -> bytes:
    """The answer's head as the client gets it: its connection headers replaced by `close`."""
    lines = raw.decode("latin-1").split("\r\n")
    kept = [lines[0]]
    for line in lines[1:]:
        if line and line.partition(":")[0].strip().lower() not in ANSWER_HOP_BY_HOP:
            kept.append(line)
    kept.append("Connection: close")
    return ("\r\n".join(kept) + "\r\n\r\n").encode("latin-1")


async def _refuse(writer: asyncio.StreamWriter, reason: str) -> None:
    body = f"Refused by the agent's egress policy: {reason}\n".encode()
    writer.write(
        b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"X-Flotilla-Refused: 1\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _close(writer: asyncio.StreamWriter) -> None:
    """Close the client's connection; one that does not close in time (a TLS peer that never says
    goodbye) or whose task is cancelled is cut, so that no socket outlives the proxy."""
    writer.close()
    try:
        async with asyncio.timeout(CLOSE_WAIT_S):
            await writer.wait_closed()
    except (OSError, TimeoutError):
        writer.transport.abort()
    except asyncio.CancelledError:
        writer.transport.abort()
        raise


async def _bad_gateway(writer: asyncio.StreamWriter, reason: str) -> None:
    body = f"{reason}\n".encode()
    writer.write(
        b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, cap: int, idle_s: float) -> int:
    """Bytes from reader to writer until its end, `cap` at most, each read within `idle_s`."""
    size = 0
    while size < cap:
        async with asyncio.timeout(idle_s):
            chunk = await reader.read(min(CHUNK, cap - size))
        if not chunk:
            break
        size += len(chunk)
        writer.write(chunk)
        await writer.drain()
    return size


async def _pipe_both(
    client_reader: asyncio.StreamReader,
    client: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    upstream: asyncio.StreamWriter,
    cap: int,
    idle_s: float,
) -> int:
    """Both directions of a tunnel until either side ends; the bytes that came back."""
    outward = asyncio.ensure_future(_copy(client_reader, upstream, cap, idle_s * 4))
    inward = asyncio.ensure_future(_copy(up_reader, client, cap, idle_s * 4))
    try:
        await asyncio.wait({outward, inward}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (outward, inward):
            task.cancel()
        results = await asyncio.gather(outward, inward, return_exceptions=True)
        upstream.close()
    received = results[1]
    return received if isinstance(received, int) else 0


def _host_of(url: str) -> str:
    try:
        return parse_target(url if "://" in url else f"https://{url}/").host
    except PolicyRefused:
        return ""

"""Which addresses a request may reach: only public ones, unless the policy allows a private host.

The check runs on every address a name resolves to, and the connection then goes to the one
address checked (pinned), so that a second DNS answer cannot swap in another.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[list[str]]]

# Cloud metadata services: named so that a refusal says what was aimed at.
METADATA = {
    ipaddress.ip_address("169.254.169.254"),
    ipaddress.ip_address("169.254.170.2"),
    ipaddress.ip_address("100.100.100.200"),
    ipaddress.ip_address("fd00:ec2::254"),
}
CGNAT = ipaddress.ip_network("100.64.0.0/10")


class AddressRefused(Exception):
    """The address is not public; the message names the range."""


class ResolveFailed(Exception):
    pass


def non_public_range(address: IpAddress) -> str | None:
    """The kind of non-public range `address` is in (loopback, private, ...), or None when public."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in METADATA:
        return "cloud metadata"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if isinstance(address, ipaddress.IPv4Address) and address in CGNAT:
        return "carrier-grade NAT (100.64.0.0/10)"
    if address.is_multicast:
        return "multicast"
    if address.is_unspecified:
        return "unspecified"
    if address.is_reserved:
        return "reserved"
    if address.is_private:
        return "private"
    if not address.is_global:
        return "reserved"
    return None


async def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the host's resolver gives for `host` (TCP), in its order."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as failed:
        raise ResolveFailed(f"{host} could not be resolved: {failed}") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def pinned_address(host: str, port: int, resolver: Resolver, *, allow_private: bool) -> IpAddress:
    """The address to connect to for `host`: every address it resolves to must be allowed."""
    try:
        literal: IpAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    candidates = [literal] if literal is not None else [_parse(text) for text in await resolver(host, port)]
    if not candidates:
        raise ResolveFailed(f"{host} resolved to no address")
    if not allow_private:
        for address in candidates:
            kind = non_public_range(address)
            if kind is not None:
                shown = host if literal is not None else f"{host} (resolved to {address})"
                raise AddressRefused(
                    f"{shown} is a {kind} address; only public addresses are allowed unless the policy "
                    "names this exact host with allow_private: true"
                )
    return candidates[0]


def _parse(text: str) -> IpAddress:
    return ipaddress.ip_address(text.split("%", 1)[0])

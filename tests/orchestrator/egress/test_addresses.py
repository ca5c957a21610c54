"""Which addresses a request may reach (no connection is made here: only the checks run)."""

from __future__ import annotations

import asyncio
import ipaddress

import pytest

from orchestrator.egress.addresses import AddressRefused, non_public_range, pinned_address


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("fd12::1", "private"),
        ("169.254.10.10", "link-local"),
        ("fe80::1", "link-local"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("100.100.100.200", "cloud metadata"),
        ("100.64.3.4", "carrier-grade NAT (100.64.0.0/10)"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_ranges(address: str, kind: str | None) -> None:
    assert non_public_range(ipaddress.ip_address(address)) == kind


def test_every_resolved_address_must_be_public() -> None:
    async def mixed(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.0.0.5"]

    with pytest.raises(AddressRefused, match=r"api.example \(resolved to 10.0.0.5\) is a private address"):
        asyncio.run(pinned_address("api.example", 443, mixed, allow_private=False))


def test_the_first_checked_address_is_pinned() -> None:
    async def public(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "93.184.216.35"]

    pinned = asyncio.run(pinned_address("api.example", 443, public, allow_private=False))
    assert str(pinned) == "93.184.216.34"


def test_numeric_host_forms_are_checked_as_addresses() -> None:
    async def system_like(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]  # what the resolver makes of 2130706433 or 0x7f.1

    with pytest.raises(AddressRefused, match="loopback"):
        asyncio.run(pinned_address("2130706433", 80, system_like, allow_private=False))

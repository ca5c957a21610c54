"""The fleet firewall's rules, its refusal to pretend when it cannot install them, and what `ps` shows."""

from __future__ import annotations

import pytest

from orchestrator.backends import firewall


def test_chain_names_are_short_stable_and_per_fleet() -> None:
    first = firewall.chain_name("research")
    assert first == firewall.chain_name("research")
    assert first != firewall.chain_name("research-2")
    assert first.startswith("FLOTILLA-") and len(first) <= 28
    assert len(firewall.chain_name("x" * 63)) <= 28


def test_only_the_agent_port_on_the_gateway_is_accepted() -> None:
    rules = firewall.fence_rules("FLOTILLA-x", "10.9.0.1", 8765)
    accepted = [rule for rule in rules if rule[-1] == "ACCEPT"]
    assert accepted == [
        ["-A", "FLOTILLA-x", "-d", "10.9.0.1/32", "-p", "tcp", "--dport", "8765", "-j", "ACCEPT"]
    ]
    assert rules[-1] == ["-A", "FLOTILLA-x", "-j", "REJECT"]


def test_without_root_nothing_is_installed_and_the_warning_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(firewall.os, "geteuid", lambda: 1000)
    status = firewall.install_fence("research", "br-0123456789ab", "172.30.0.1", 8765)
    assert not status.installed
    assert status.warning is not None
    assert "without root" in status.warning and "172.30.0.1" in status.warning
    firewall.remove_fence("research")  # nothing to remove, and no iptables call is attempted


def test_ps_shows_dead_letters_next_to_the_inbox() -> None:
    from rich.console import Console

    from orchestrator.cli.render import fleet_table

    agent = {
        "name": "writer",
        "state": "running",
        "hibernated": False,
        "health": "healthy",
        "restarts": 0,
        "uptime_s": 5,
        "memory_bytes": None,
        "pending": 1,
        "dead_letters": 2,
        "spend_today_usd": 0.0,
        "model": "test",
    }
    console = Console(width=200, record=True)
    console.print(fleet_table({"fleet": "demo", "runtime": "docker", "agents": [agent]}))
    assert "1 +2 dead" in console.export_text()


def test_a_backend_that_could_not_fence_is_reported_by_the_fleet_status(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from types import SimpleNamespace

    from orchestrator.api.operator.fleet_status import fleet_warnings

    monkeypatch.setattr(firewall.os, "geteuid", lambda: 1000)
    status = firewall.install_fence("research", "br-0123456789ab", "172.30.0.1", 8765)
    backend = SimpleNamespace(fence_warning=status.warning)
    assert fleet_warnings(SimpleNamespace(backend=backend)) == [status.warning]  # type: ignore[arg-type]
    assert fleet_warnings(SimpleNamespace(backend=SimpleNamespace(fence_warning=None))) == []  # type: ignore[arg-type]

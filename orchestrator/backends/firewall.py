"""The fleet's fence: host firewall rules that let an agent reach its orchestrator's port and nothing else.

An `internal` bridge with inter-container traffic disabled keeps agents off the outside world and
off each other, but not off the host: every address the host owns (the fleet gateway, other
fleets' gateways, anything bound to 0.0.0.0) answers through the gateway. Each fleet therefore
gets a chain of its own, FLOTILLA-<digest of the fleet name>:

    -A FLOTILLA-xxxx -d <gateway>/32 -p tcp --dport <agent port> -j ACCEPT
    -A FLOTILLA-xxxx -j REJECT

jumped to from INPUT (traffic addressed to the host) and from DOCKER-USER (traffic the host would
forward to another bridge), for packets arriving on the fleet's bridge. The chain is rebuilt on
every start (idempotent, so adoption after a restart re-checks it and follows a new port) and
deleted with the fleet's network. Rules go through the `iptables` command, the same one Docker
uses (legacy or nf_tables backend alike). Without root or without iptables nothing is installed
and `FenceStatus.warning` says so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass

CHAIN_PREFIX = "FLOTILLA-"
# Chains that see packets coming from the fleet's bridge: to the host, and forwarded elsewhere.
HOOKS = ("INPUT", "DOCKER-USER")
IPTABLES_TIMEOUT_S = 10.0


class FirewallError(Exception):
    pass


@dataclass(frozen=True)
class FenceStatus:
    installed: bool
    warning: str | None = None


def chain_name(fleet: str) -> str:
    """A short, stable chain name per fleet (iptables allows 28 characters)."""
    return CHAIN_PREFIX + hashlib.sha256(fleet.encode()).hexdigest()[:12]


def fence_rules(chain: str, gateway: str, port: int) -> list[list[str]]:
    """The chain's rules: the orchestrator's agent port is the one thing an agent may reach."""
    return [
        ["-A", chain, "-d", f"{gateway}/32", "-p", "tcp", "--dport", str(port), "-j", "ACCEPT"],
        ["-A", chain, "-j", "REJECT"],
    ]


def iptables_usable() -> bool:
    return os.geteuid() == 0 and shutil.which("iptables") is not None


def _iptables(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            ["iptables", "-w", *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=IPTABLES_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FirewallError(f"iptables {' '.join(args)}: {exc}") from exc
    if check and done.returncode != 0:
        raise FirewallError(f"iptables {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done


def _hooks_present() -> list[str]:
    """INPUT always; DOCKER-USER when the daemon made it (it does whenever it manages iptables)."""
    return [hook for hook in HOOKS if _iptables("-S", hook, check=False).returncode == 0]


def install_fence(fleet: str, bridge: str, gateway: str, port: int) -> FenceStatus:
    """Build (or rebuild) the fleet's chain and make sure each hook jumps to it exactly once."""
    if not iptables_usable():
        return FenceStatus(
            installed=False,
            warning=(
                f"no firewall for fleet {fleet}: the orchestrator runs without root or without iptables, "
                f"so agents can reach every host service listening on 0.0.0.0 and other fleets' "
                f"gateways through {gateway}; run `flotilla up` as root to fence them in"
            ),
        )
    chain = chain_name(fleet)
    if _iptables("-S", chain, check=False).returncode == 0:
        _iptables("-F", chain)
    else:
        _iptables("-N", chain)
    for rule in fence_rules(chain, gateway, port):
        _iptables(*rule)
    wanted = ["-i", bridge, "-j", chain]
    for hook in _hooks_present():
        found = _jumps(hook, chain)
        # A jump for an earlier bridge of this fleet (its network was re-created) goes.
        for stale in (jump for jump in found if jump != wanted):
            _iptables("-D", hook, *stale)
        if wanted not in found:
            _iptables("-I", hook, "1", *wanted)
    return FenceStatus(installed=True)


def _jumps(hook: str, chain: str) -> list[list[str]]:
    """The rule specifications in `hook` that jump to `chain`, as `iptables -S` prints them."""
    jumps = []
    for line in _iptables("-S", hook).stdout.splitlines():
        words = line.split()
        if words[:2] == ["-A", hook] and words[-2:] == ["-j", chain]:
            jumps.append(words[2:])
    return jumps


def remove_fence(fleet: str) -> None:
    """Delete every jump to the fleet's chain, then the chain. Nothing else is touched."""
    if not iptables_usable():
        return
    chain = chain_name(fleet)
    for hook in _hooks_present():
        for jump in _jumps(hook, chain):
            _iptables("-D", hook, *jump)
    if _iptables("-S", chain, check=False).returncode == 0:
        _iptables("-F", chain)
        _iptables("-X", chain)


def fence_listing(fleet: str) -> list[str]:
    """The fleet's rules as `iptables -S` prints them (empty when there are none)."""
    if not iptables_usable():
        return []
    done = _iptables("-S", chain_name(fleet), check=False)
    return done.stdout.splitlines() if done.returncode == 0 else []

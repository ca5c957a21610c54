"""The browser sandbox's fence on the host: from its network, only the session's egress proxy.

The sandbox's network is `internal`, so nothing leaves the host through it, but every address the
host owns answers on its gateway (the orchestrator's agent port, services bound to 0.0.0.0, other
networks' gateways). Each sandbox therefore gets a chain of its own, jumped to from INPUT and
DOCKER-USER for packets arriving on its bridge:

    -A FLOTILLA-B-xxxx -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
    -A FLOTILLA-B-xxxx -d <gateway>/32 -p tcp --dport <proxy port> -j ACCEPT
    -A FLOTILLA-B-xxxx -j REJECT

Established traffic is what the orchestrator opened (its DevTools connection) or what the proxy
accepted. The chain goes with the sandbox. Without root or iptables nothing is installed and the
sandbox says so in its warning.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

CHAIN_PREFIX = "FLOTILLA-B-"
HOOKS = ("INPUT", "DOCKER-USER")
TIMEOUT_S = 10.0


class FenceFailed(Exception):
    pass


def chain_of(sandbox: str) -> str:
    return CHAIN_PREFIX + hashlib.sha256(sandbox.encode()).hexdigest()[:12]


def fence_usable() -> bool:
    return os.geteuid() == 0 and shutil.which("iptables") is not None


def install_fence(sandbox: str, bridge: str, gateway: str, proxy_port: int) -> bool:
    """Fence the sandbox's bridge; False when this host cannot (no root, no iptables)."""
    if not fence_usable():
        return False
    chain = chain_of(sandbox)
    _run("-N", chain)
    _run("-A", chain, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT")
    _run("-A", chain, "-d", f"{gateway}/32", "-p", "tcp", "--dport", str(proxy_port), "-j", "ACCEPT")
    _run("-A", chain, "-j", "REJECT")
    for hook in HOOKS:
        if _run("-S", hook, check=False).returncode == 0:
            _run("-I", hook, "1", "-i", bridge, "-j", chain)
    return True


def remove_fence(sandbox: str, bridge: str) -> None:
    if not fence_usable():
        return
    chain = chain_of(sandbox)
    for hook in HOOKS:
        while _run("-D", hook, "-i", bridge, "-j", chain, check=False).returncode == 0:
            pass
    if _run("-S", chain, check=False).returncode == 0:
        _run("-F", chain, check=False)
        _run("-X", chain, check=False)


def fence_rules(sandbox: str) -> list[str]:
    done = _run("-S", chain_of(sandbox), check=False) if fence_usable() else None
    return done.stdout.splitlines() if done is not None and done.returncode == 0 else []


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            ["iptables", "-w", *args], check=False, capture_output=True, text=True, timeout=TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as failed:
        raise FenceFailed(f"iptables {' '.join(args)}: {failed}") from None
    if check and done.returncode != 0:
        raise FenceFailed(f"iptables {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done

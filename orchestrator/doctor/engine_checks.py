"""The checks of what the Docker engine holds for the fleet: the engine itself, the agent
image, the agents' volumes and disk quotas, the firewall chain, units and networks left over,
and agents held stopped whose unit runs."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from orchestrator.backends.base import LABEL_AGENT, LABEL_FLEET, BackendUnavailable
from orchestrator.backends.docker import connect_docker, network_name
from orchestrator.backends.docker_snapshot import LABEL_SNAPSHOT_OF
from orchestrator.backends.docker_storage import device_link, disk_image, volume_name
from orchestrator.backends.firewall import chain_name, fence_listing, iptables_usable
from orchestrator.config.fleet import LoadedFleet
from orchestrator.doctor.models import Finding
from orchestrator.state.paths import StatePaths


def connect(timeout_s: int = 10) -> tuple[Any | None, Finding]:
    try:
        client = connect_docker(timeout_s)
        version = client.version().get("Version", "?")
    except (BackendUnavailable, OSError) as failed:
        return None, Finding(
            check="engine",
            severity="error",
            summary=f"the Docker engine does not answer: {failed}",
            fix="start the Docker daemon (systemctl start docker), then flotilla up",
        )
    return client, Finding(check="engine", severity="ok", summary=f"the Docker engine {version} answers")


def check_image(client: Any, image: str) -> Finding:
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return Finding(
            check="image",
            severity="error",
            summary=f"the agent image {image} is not on this machine",
            fix=f"flotilla image build --tag {image}",
        )
    return Finding(check="image", severity="ok", summary=f"the agent image {image} is present")


def _units(client: Any, fleet: str) -> list[Any]:
    found: list[Any] = client.containers.list(all=True, filters={"label": f"{LABEL_FLEET}={fleet}"})
    return found


def check_volumes(client: Any, fleet: LoadedFleet, paths: StatePaths) -> list[Finding]:
    import docker.errors

    findings = []
    for agent in fleet.config.agents:
        name = volume_name(fleet.name, agent)
        try:
            client.volumes.get(name)
        except docker.errors.NotFound:
            findings.append(
                Finding(
                    check="volumes",
                    severity="warning",
                    agent=agent,
                    summary=f"agent {agent} has no volume {name} (it is made, empty, at the next start)",
                    fix="flotilla up (or flotilla restore ARCHIVE to bring its files back)",
                )
            )
            continue
        if fleet.config.resources_of(agent).disk_bytes and not disk_image(paths.root, agent).exists():
            findings.append(
                Finding(
                    check="volumes",
                    severity="warning",
                    agent=agent,
                    summary=f"agent {agent} declares a disk quota but has no disk image: its /data has no quota",
                    fix=f"run flotilla as root (loop devices), then flotilla restart {agent}",
                )
            )
        elif fleet.config.resources_of(agent).disk_bytes and not device_link(paths.root, agent).exists():
            findings.append(
                Finding(
                    check="volumes",
                    severity="warning",
                    agent=agent,
                    summary=f"agent {agent}'s disk image is not attached (its unit cannot start on it)",
                    fix="flotilla up",
                )
            )
    if not findings:
        findings.append(
            Finding(check="volumes", severity="ok", summary="every agent has its volume and quota")
        )
    return findings


def check_firewall(fleet: str, running: bool) -> Finding:
    if not running:
        return Finding(
            check="firewall", severity="ok", summary="the orchestrator is not running: no chain expected"
        )
    if not iptables_usable():
        return Finding(
            check="firewall",
            severity="warning",
            summary="the fleet's firewall chain cannot be checked (needs root and iptables)",
            fix="run flotilla doctor as root",
        )
    if not fence_listing(fleet):
        return Finding(
            check="firewall",
            severity="error",
            summary=f"the fleet's firewall chain {chain_name(fleet)} is missing: its agents can reach the host",
            fix="flotilla down && flotilla up -d",
        )
    return Finding(
        check="firewall", severity="ok", summary=f"the firewall chain {chain_name(fleet)} is in place"
    )


def check_leftovers(client: Any, fleet: LoadedFleet, running: bool) -> list[Finding]:
    findings = []
    for unit in _units(client, fleet.name):
        labels = unit.labels or {}
        agent = labels.get(LABEL_AGENT)
        if LABEL_SNAPSHOT_OF in labels:
            summary = f"container {unit.name} is a backup snapshot of {labels[LABEL_SNAPSHOT_OF]} left behind"
        elif agent not in fleet.config.agents:
            summary = f"container {unit.name} belongs to agent {agent}, no longer in fleet.yaml"
        else:
            continue
        findings.append(
            Finding(
                check="leftovers", severity="warning", summary=summary, fix=f"docker rm -f {unit.id[:12]}"
            )
        )
    network = client.networks.list(names=[network_name(fleet.name)])
    if network and not running and not _units(client, fleet.name):
        findings.append(
            Finding(
                check="leftovers",
                severity="warning",
                summary=f"network {network_name(fleet.name)} is left without an orchestrator or agents",
                fix="flotilla down",
            )
        )
    if not findings:
        findings.append(
            Finding(check="leftovers", severity="ok", summary="no container or network left over")
        )
    return findings


def check_held_stopped(client: Any, fleet: str, stopped: Collection[str]) -> list[Finding]:
    """An agent the operator stopped must not run: `ps` would say stopped and count it awake."""
    findings = []
    for unit in _units(client, fleet):
        agent = (unit.labels or {}).get(LABEL_AGENT)
        if agent in stopped and unit.status == "running":
            findings.append(
                Finding(
                    check="held_stopped",
                    severity="error",
                    agent=agent,
                    summary=f"agent {agent} is stopped by the operator but its container {unit.name} runs",
                    fix=f"flotilla stop {agent}",
                )
            )
    if not findings:
        findings.append(Finding(check="held_stopped", severity="ok", summary="every stopped agent is down"))
    return findings

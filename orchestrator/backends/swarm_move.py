"""Where a swarm agent's storage is, and removing storage a move left behind.

A swarm volume is local to the node that holds it and the orchestrator reaches only this
node's engine, so moving an agent never copies a volume: the agent runs on the target node on
fresh storage (a volume with a new name, so that a move to the same node never reuses the old
one) and is handed its snapshot over its link (orchestrator.running_agents.move). The old volume is
removed once the agent answers on the new one; this node's volumes through its engine, another
node's named for the operator (the engine API removes a volume only on the node that holds it).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import docker
import docker.errors

from orchestrator.backends.base import BackendError, StoragePlace

STOPPED_WAIT_S = 60.0
POLL_S = 0.25


def wait_until(condition: Any, what: str, within_s: float = STOPPED_WAIT_S) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(POLL_S)
    raise BackendError(f"timed out waiting for {what}")


def mounted_volume(service: Any, data_path: str) -> str | None:
    """The name of the volume the service mounts at `data_path`."""
    container = service.attrs["Spec"]["TaskTemplate"].get("ContainerSpec") or {}
    for mount in container.get("Mounts") or []:
        if mount.get("Target") == data_path and mount.get("Type") == "volume":
            return str(mount.get("Source"))
    return None


def fresh_volume_name(default: str) -> str:
    return f"{default}-{secrets.token_hex(3)}"


def remove_volume(client: docker.DockerClient, place: StoragePlace, this_node: str | None) -> str:
    """Remove the volume once no container (a finished task's included) holds it, when it is on
    this node; otherwise say where it stays."""
    if place.node is not None and this_node is not None and place.node != this_node:
        return (
            f"volume {place.name} stays on node {place.node}: remove it there with "
            f"`docker volume rm {place.name}`"
        )

    def gone() -> bool:
        try:
            client.volumes.get(place.name).remove()
        except docker.errors.NotFound:
            return True
        except docker.errors.APIError:
            return False  # still in use by a task container the engine has yet to remove
        return True

    wait_until(gone, f"volume {place.name} to be free")
    return f"removed volume {place.name}"

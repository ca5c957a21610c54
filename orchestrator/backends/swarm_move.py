"""Carrying a swarm agent's storage from one node to another, as a tar stream.

A swarm volume is local to the node that holds it, so moving an agent means: its service
stopped, the volume read into a snapshot file of the orchestrator's (`.flotilla/moves/AGENT.tar`),
the volume removed, a volume of the same name made on the target node and filled from the
snapshot before the agent's new task starts there. Reading and filling go through a throwaway
container of the agent's image that is never started (the engine copies to and from a stopped
container's volumes), with no network, so nothing of the agent runs during the copy. The
archive keeps owners and modes, so the files stay the agent's (uid 10001).

The throwaway containers are made through this node's engine: the source and target node must
be this node (the manager the orchestrator runs on). Another node's engine is not reachable
through the swarm API; see docs/swarm.md for moving between two machines.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import docker
import docker.errors

from orchestrator.backends.base import BackendError

STOPPED_WAIT_S = 60.0
POLL_S = 0.25
CHUNK = 1 << 20


def wait_until(condition: Any, what: str, within_s: float = STOPPED_WAIT_S) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(POLL_S)
    raise BackendError(f"timed out waiting for {what}")


class VolumeCarrier:
    """Snapshots a volume into a file and fills a fresh volume from one, on this node."""

    def __init__(self, client: docker.DockerClient, agent_user: str) -> None:
        self._client = client
        self._user = f"{agent_user}:{agent_user}"

    def _holder(self, image: str, volume: str, mode: str) -> Any:
        """A container that mounts `volume` at /data and never runs."""
        try:
            return self._client.containers.create(
                image,
                entrypoint=["true"],
                user=self._user,
                volumes={volume: {"bind": "/data", "mode": mode}},
                network_mode="none",
                labels={"io.flotilla.component": "carrier"},
            )
        except docker.errors.DockerException as exc:
            raise BackendError(f"cannot make a container to copy volume {volume}: {exc}") from exc

    def export(self, image: str, volume: str, snapshot: Path) -> int:
        """Write the volume's contents (as `data/...`) to `snapshot`; its size in bytes."""
        holder = self._holder(image, volume, "ro")
        partial = snapshot.with_suffix(".partial")
        try:
            stream, _ = holder.get_archive("/data")
            with partial.open("wb") as out:
                for chunk in stream:
                    out.write(chunk)
        except docker.errors.DockerException as exc:
            raise BackendError(f"cannot read volume {volume}: {exc}") from exc
        finally:
            holder.remove(force=True)
        partial.replace(snapshot)
        return snapshot.stat().st_size

    def fill(self, image: str, volume: str, labels: dict[str, str], snapshot: Path) -> None:
        """Make `volume` (it must not exist) and unpack `snapshot` into it."""
        try:
            self._client.volumes.create(name=volume, driver="local", labels=labels)
        except docker.errors.APIError as exc:
            raise BackendError(f"cannot create volume {volume}: {exc.explanation or exc}") from exc
        holder = self._holder(image, volume, "rw")
        try:
            with snapshot.open("rb") as archive:
                if not holder.put_archive("/", archive):
                    raise BackendError(f"the engine refused the snapshot for volume {volume}")
        except docker.errors.DockerException as exc:
            raise BackendError(f"cannot fill volume {volume}: {exc}") from exc
        finally:
            holder.remove(force=True)

    def remove_volume(self, volume: str) -> None:
        """Remove the volume once no container (a finished task's included) holds it."""

        def gone() -> bool:
            try:
                self._client.volumes.get(volume).remove()
            except docker.errors.NotFound:
                return True
            except docker.errors.APIError:
                return False  # still in use by a task container the engine has yet to remove
            return True

        wait_until(gone, f"volume {volume} to be free")

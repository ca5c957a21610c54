"""The snapshot of a stopped agent's volume, taken by the agent's own snapshot code in a
throwaway container of the agent's image: its volume read-only, no network, no capabilities,
a read-only root, the agent's uid. The orchestrator only reads what the container writes to
stdout, and checks it as it checks an answer over the agent's link; it never mounts or
opens the volume itself.

The code that runs is the image's, never the agent's: Python starts isolated (`-I`: no user
site, no `PYTHON*` variables, no current folder on the path) with HOME outside /data, and finds
agent_runtime in the image's library folder only. A `.pth` or a module the agent planted under
/data is never imported."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import docker
import docker.errors
import requests.exceptions

from orchestrator.backends.base import LABEL_PREFIX, BackendError, SnapshotRun, StoppedStorage
from orchestrator.backends.docker_storage import AGENT_UID, volume_name
from orchestrator.backends.docker_streams import close_attach_stream

SCRATCH = "/tmp/flotilla-snapshot"
# Where the image installs agent_runtime and its dependencies (images/agent/Dockerfile); the image
# names it in PYTHONPATH, which the isolated interpreter ignores.
IMAGE_LIBRARY = "/opt/flotilla/lib"
SNAPSHOT_MODULE = "agent_runtime.workspace.snapshot"
ISOLATED_RUN = (
    "import runpy, sys; "
    f"sys.path.insert(0, {IMAGE_LIBRARY!r}); "
    f"runpy.run_module({SNAPSHOT_MODULE!r}, run_name='__main__', alter_sys=True)"
)
SNAPSHOT_COMMAND = ["python3", "-I", "-c", ISOLATED_RUN, "/data", SCRATCH]
# The snapshot is made in memory (tmpfs, charged to the container) before it is streamed out:
# the agent's own files (memory, history, learnings) up to this size.
SCRATCH_BYTES = 1024 * 1024 * 1024
MEMORY_BYTES = SCRATCH_BYTES + 256 * 1024 * 1024
LABEL_SNAPSHOT_OF = f"{LABEL_PREFIX}.snapshot-of"
WAIT_S = 60
STDERR_KEPT = 2000


class DockerSnapshotRun(SnapshotRun):
    def __init__(self, client: docker.DockerClient, storage: StoppedStorage) -> None:
        volume = volume_name(storage.fleet, storage.agent)
        try:
            client.volumes.get(volume)
        except docker.errors.NotFound:
            raise BackendError(f"agent {storage.agent} has no storage yet (no volume {volume})") from None
        except docker.errors.DockerException as failed:
            raise BackendError(f"cannot look up the storage of agent {storage.agent}: {failed}") from None
        self._agent = storage.agent
        self._stderr = b""
        self._container: Any = None
        self._output: Any = None
        try:
            self._container = client.containers.create(
                storage.image,
                entrypoint=SNAPSHOT_COMMAND,
                user=f"{AGENT_UID}:{AGENT_UID}",
                environment={"HOME": SCRATCH},
                working_dir="/",
                volumes={volume: {"bind": "/data", "mode": "ro"}},
                tmpfs={SCRATCH: f"size={SCRATCH_BYTES},mode=0700,uid={AGENT_UID},gid={AGENT_UID}"},
                network_mode="none",
                read_only=True,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges:true"],
                mem_limit=MEMORY_BYTES,
                pids_limit=64,
                labels={LABEL_SNAPSHOT_OF: f"{storage.fleet}/{storage.agent}"},
                # What it writes is streamed here; a log on the host would keep a second copy.
                log_config={"type": "none"},
            )
            self._output = self._container.attach(
                stdout=True, stderr=True, stream=True, logs=False, demux=True
            )
            self._container.start()
        except docker.errors.DockerException as failed:
            self._remove()
            raise BackendError(f"cannot start the snapshot of agent {storage.agent}: {failed}") from None

    def blocks(self) -> Iterator[bytes]:
        try:
            for out, err in self._output:
                if err:
                    self._stderr = (self._stderr + err)[-STDERR_KEPT:]
                if out:
                    yield out
        except docker.errors.DockerException as failed:
            raise BackendError(f"the snapshot of agent {self._agent} broke off: {failed}") from None

    def finish(self) -> str | None:
        try:
            # What was not read (the reader gave up) is drained, so the run is not left blocked.
            for _ in self.blocks():
                pass
        except BackendError:
            pass
        try:
            status = self._container.wait(timeout=WAIT_S)
            code = int(status.get("StatusCode", -1))
        except (docker.errors.DockerException, requests.exceptions.RequestException) as failed:
            code, self._stderr = -1, str(failed).encode()
        finally:
            self._remove()
        if code == 0:
            return None
        said = self._stderr.decode(errors="replace").strip().splitlines()
        return f"the snapshot run exited with status {code}" + (f": {said[-1]}" if said else "")

    def abort(self) -> None:
        # Removing the container ends its output stream, so a reader blocked on it returns.
        self._remove()

    def _remove(self) -> None:
        # The container first: its end ends the stream, so a reader blocked on it returns cleanly.
        if self._container is not None:
            with contextlib.suppress(docker.errors.DockerException):
                self._container.remove(force=True)
        close_attach_stream(self._output)
        self._output = None

"""`exec` jobs in throwaway containers of the agent's image on the local Docker engine.

Each job gets a container of its own, removed when it ends: network mode `none` (loopback only),
a read-only root, every capability dropped, no-new-privileges, uid 10001, a work folder and /tmp
in memory, the memory (swap included), CPU and pid caps of the agent's `tools.exec`, no log kept
on the host. The input files are an orchestrator-owned folder mounted read-only; nothing else of
the host is visible. The launcher's report is read from the container's stdout, capped; the
orchestrator kills the container when the report does not come within the time cap and a grace.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import docker
import docker.errors
import requests.exceptions
from docker.types import LogConfig, Mount, Ulimit

from orchestrator.backends.base import LABEL_PREFIX, BackendError
from orchestrator.backends.docker_storage import AGENT_UID
from orchestrator.backends.docker_streams import close_attach_stream
from orchestrator.backends.sandbox import (
    INPUTS_DIR,
    WORK_DIR,
    CodeSandbox,
    SandboxJob,
    SandboxOutcome,
    launcher_source,
    parse_report,
)

LABEL_SANDBOX_OF = f"{LABEL_PREFIX}.sandbox-of"
LABEL_SANDBOX_FLEET = f"{LABEL_PREFIX}.sandbox-fleet"
# Past the command's own time cap: the launcher's start, its drain of the pipes and its report.
GRACE_S = 5.0
WAIT_S = 30
TMP_BYTES = 16 * 1024 * 1024
OPEN_FILES = 1024
STDERR_KEPT = 2000


class DockerSandbox(CodeSandbox):
    confined = True
    description = (
        "a fresh container of the agent's image per call: no network, read-only root, no capabilities, "
        "no-new-privileges, uid 10001, memory/cpu/pid/time caps"
    )

    def __init__(self, client: docker.DockerClient) -> None:
        self._api = client.api

    def run(self, job: SandboxJob) -> SandboxOutcome:
        started = time.monotonic()
        container = self._create(job)
        try:
            raw, stderr, overflow, killed = self._run(container, job)
            report = parse_report(raw)
            if isinstance(report, str):
                problem = _problem(report, stderr, overflow, job.report_cap)
                oom = self._oom_killed(container)
                return SandboxOutcome(None, time.monotonic() - started, killed, oom, problem)
            return SandboxOutcome(report, time.monotonic() - started, killed)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as failed:
            raise BackendError(f"the sandbox of agent {job.agent} failed: {failed}") from None
        finally:
            self._remove(container)

    def _run(self, container: str, job: SandboxJob) -> tuple[bytes, bytes, bool, bool]:
        """Start the container and read it to its end: its stdout (capped), the end of its stderr,
        whether it wrote past the cap, and whether it was killed at the deadline."""
        fired = threading.Event()

        def kill_at_deadline() -> None:
            fired.set()
            self._kill(container)

        deadline = threading.Timer(job.limits.timeout_s + GRACE_S, kill_at_deadline)
        deadline.daemon = True
        output = self._api.attach(container, stdout=True, stderr=True, stream=True, demux=True)
        try:
            self._api.start(container)
            deadline.start()
            raw, stderr, overflow = _read(output, job.report_cap)
            if overflow:
                self._kill(container)
            self._wait(container)
        finally:
            deadline.cancel()
            close_attach_stream(output)
        return raw, stderr, overflow, fired.is_set()

    def _create(self, job: SandboxJob) -> str:
        limits = job.limits
        mounts = []
        if job.inputs_dir is not None:
            mounts.append(Mount(INPUTS_DIR, str(job.inputs_dir.resolve()), type="bind", read_only=True))
        owner = f"uid={AGENT_UID},gid={AGENT_UID}"
        host_config = self._api.create_host_config(
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            mounts=mounts,
            tmpfs={
                WORK_DIR: f"size={limits.work_bytes},mode=0700,{owner},exec,nosuid,nodev",
                "/tmp": f"size={TMP_BYTES},mode=1777,nosuid,nodev",
            },
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,
            nano_cpus=int(limits.cpus * 1e9),
            pids_limit=limits.pids,
            ulimits=[
                Ulimit(name="nofile", soft=OPEN_FILES, hard=OPEN_FILES),
                Ulimit(name="core", soft=0, hard=0),
            ],
            # What it writes is read here, capped; a log on the host would keep an uncapped copy.
            log_config=LogConfig(type="none"),
        )
        spec = job.launcher_spec(WORK_DIR, INPUTS_DIR if job.inputs_dir else None, kill_all=True)
        try:
            created = self._api.create_container(
                job.image,
                entrypoint=["python3", "-I", "-S", "-c", launcher_source(), spec],
                user=f"{AGENT_UID}:{AGENT_UID}",
                working_dir=WORK_DIR,
                hostname="sandbox",
                network_disabled=True,
                labels={LABEL_SANDBOX_OF: f"{job.fleet}/{job.agent}", LABEL_SANDBOX_FLEET: job.fleet},
                host_config=host_config,
                use_config_proxy=False,
            )
        except docker.errors.ImageNotFound:
            raise BackendError(
                f"agent image {job.image} not found: build it with `flotilla image build`"
            ) from None
        except docker.errors.APIError as failed:
            raise BackendError(
                f"cannot create a sandbox for agent {job.agent}: {failed.explanation or failed}"
            ) from None
        return str(created["Id"])

    def _wait(self, container: str) -> None:
        try:
            self._api.wait(container, timeout=WAIT_S)
        except requests.exceptions.ReadTimeout:
            self._kill(container)

    def _kill(self, container: str) -> None:
        with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
            self._api.kill(container)

    def _remove(self, container: str) -> None:
        with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
            self._api.remove_container(container, force=True)

    def _oom_killed(self, container: str) -> bool:
        """Whether the engine saw an out-of-memory kill (asked only when no report came)."""
        try:
            state = self._api.inspect_container(container).get("State") or {}
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            return False
        return bool(state.get("OOMKilled"))


def remove_sandboxes(client: docker.DockerClient, fleet: str) -> int:
    """Remove the fleet's sandboxes that an orchestrator stopped mid-call left behind."""
    removed = 0
    for found in client.api.containers(all=True, filters={"label": f"{LABEL_SANDBOX_FLEET}={fleet}"}):
        with contextlib.suppress(docker.errors.NotFound):
            client.api.remove_container(found["Id"], force=True)
            removed += 1
    return removed


def _read(output: Iterator[tuple[bytes | None, bytes | None]], cap: int) -> tuple[bytes, bytes, bool]:
    """The container's stdout up to `cap` bytes, the end of its stderr, and whether it wrote more."""
    raw = bytearray()
    stderr = b""
    for out, err in output:
        if err:
            stderr = (stderr + err)[-STDERR_KEPT:]
        if out:
            raw += out
            if len(raw) > cap:
                return bytes(raw[:cap]), stderr, True
    return bytes(raw), stderr, False


def _problem(report: str, stderr: bytes, overflow: bool, cap: int) -> str:
    if overflow:
        return f"the sandbox wrote more than {cap} bytes of report; it was stopped"
    said = stderr.decode(errors="replace").strip().splitlines()
    return report + (f" ({said[-1][:300]})" if said else "")

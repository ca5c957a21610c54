"""The exec tool's sandbox against the real Docker daemon, as an attacker would use it: a fork
bomb, a 1 GiB allocation, a command that never ends, a connection to the host, writes to the
system and to the input files. Each must be contained and reported, and the host stay fine.

No test sends traffic anywhere but the host's loopback: the network is checked from the
container's settings and from inside it.
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from orchestrator.backends.docker_sandbox import (
    LABEL_SANDBOX_FLEET,
    LABEL_SANDBOX_OF,
    DockerSandbox,
    remove_sandboxes,
)
from orchestrator.backends.sandbox import LauncherReport, SandboxJob, SandboxLimits, SandboxOutcome
from orchestrator.images.build import ImageBuildResult
from tests.docker_fixtures import unique

pytestmark = pytest.mark.docker

MIB = 1024 * 1024
LIMITS = SandboxLimits(
    timeout_s=10, memory_bytes=128 * MIB, cpus=1.0, pids=32, output_bytes=4096, work_bytes=8 * MIB
)


@pytest.fixture
def sandbox(docker_client: Any, agent_image: ImageBuildResult) -> Iterator[DockerSandbox]:
    yield DockerSandbox(docker_client)


@pytest.fixture
def owner() -> str:
    return unique("exec")


def run(
    sandbox: DockerSandbox,
    owner: str,
    command: str,
    limits: SandboxLimits = LIMITS,
    inputs: Path | None = None,
    outputs: list[str] | None = None,
) -> SandboxOutcome:
    job = SandboxJob(
        fleet=owner,
        agent="coder",
        image=os.environ.get("FLOTILLA_IMAGE", "flotilla/agent:latest"),
        argv=["/bin/sh", "-c", command],
        limits=limits,
        inputs_dir=inputs,
        outputs=outputs or [],
    )
    return sandbox.run(job)


def reported(outcome: SandboxOutcome) -> LauncherReport:
    assert outcome.report is not None, outcome.problem
    return outcome.report


def text(encoded: str) -> str:
    return base64.b64decode(encoded).decode()


def leftovers(docker_client: Any, owner: str) -> list[Any]:
    return docker_client.containers.list(all=True, filters={"label": f"{LABEL_SANDBOX_OF}={owner}/coder"})


def test_python_answers_and_the_container_is_gone(
    sandbox: DockerSandbox, owner: str, docker_client: Any
) -> None:
    report = reported(run(sandbox, owner, 'python3 -c "print(6*7)"'))
    assert report.exit_code == 0 and text(report.stdout) == "42\n"
    assert leftovers(docker_client, owner) == []


def test_the_command_runs_confined(sandbox: DockerSandbox, owner: str) -> None:
    probe = (
        "id -u; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status; "
        "ls /sys/class/net; touch /usr/x 2>&1 || true; pwd; touch here && echo work-writable"
    )
    out = text(reported(run(sandbox, owner, probe)).stdout)
    assert out.splitlines()[0] == "10001"
    assert "CapEff:\t0000000000000000" in out and "NoNewPrivs:\t1" in out
    assert "\nlo\n" in out and "eth0" not in out
    assert "Read-only file system" in out
    assert "/work\nwork-writable" in out


def test_the_images_python_packages_are_importable(sandbox: DockerSandbox, owner: str) -> None:
    report = reported(run(sandbox, owner, "python3 -c 'import pydantic; print(pydantic.VERSION)'"))
    assert report.exit_code == 0, text(report.stderr)


def test_the_container_has_no_network_and_cannot_reach_the_host(
    sandbox: DockerSandbox, owner: str, docker_client: Any
) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    seen: list[Any] = []
    settings: list[dict[str, Any]] = []

    def inspect_while_running() -> None:
        for _ in range(100):
            found = leftovers(docker_client, owner)
            if found:
                settings.append(docker_client.api.inspect_container(found[0].id))
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=inspect_while_running)
    watcher.start()
    connect = (
        "import socket, time\n"
        "time.sleep(1)\n"
        "s = socket.socket(); s.settimeout(2)\n"
        f"print(s.connect_ex(('127.0.0.1', {port})))\n"
    )
    try:
        report = reported(run(sandbox, owner, f'python3 -c "{connect}"'))
        with pytest.raises(TimeoutError):
            seen.append(listener.accept())
        # The listener itself answers from the host, so the refusal above is the sandbox's doing.
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    finally:
        watcher.join()
        listener.close()
    assert int(text(report.stdout).strip()) != 0, "the sandbox reached the host's listener"
    assert seen == []
    (attrs,) = settings
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none" and attrs["Config"]["NetworkDisabled"] is True
    assert set(attrs["NetworkSettings"]["Networks"] or {}) <= {"none"}
    assert host["ReadonlyRootfs"] is True and host["CapDrop"] == ["ALL"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert host["Memory"] == LIMITS.memory_bytes and host["MemorySwap"] == LIMITS.memory_bytes
    assert host["PidsLimit"] == LIMITS.pids and host["NanoCpus"] == int(LIMITS.cpus * 1e9)
    assert attrs["Config"]["User"] == "10001:10001"
    assert host["LogConfig"]["Type"] == "none"


def test_a_fork_bomb_stops_at_the_pid_cap(sandbox: DockerSandbox, owner: str, docker_client: Any) -> None:
    limits = SandboxLimits(**{**LIMITS.__dict__, "timeout_s": 5})
    outcome = run(sandbox, owner, "bomb() { bomb | bomb & }; bomb; sleep 30", limits)
    report = reported(outcome)
    assert "fork" in text(report.stderr).lower() or report.timed_out
    assert outcome.duration_s < limits.timeout_s + 5
    assert leftovers(docker_client, owner) == []
    # The host still starts processes.
    assert subprocess.run(["true"], check=False).returncode == 0


def test_a_1_gib_allocation_is_killed_at_the_memory_cap(sandbox: DockerSandbox, owner: str) -> None:
    report = reported(run(sandbox, owner, 'python3 -c "b = bytearray(1 << 30); print(len(b))"'))
    assert report.oom_kills >= 1
    assert report.exit_code == 137 and text(report.stdout) == ""


def test_a_command_that_never_ends_is_cut_at_its_time_cap(sandbox: DockerSandbox, owner: str) -> None:
    limits = SandboxLimits(**{**LIMITS.__dict__, "timeout_s": 2})
    outcome = run(sandbox, owner, "echo started; sleep 600", limits)
    report = reported(outcome)
    assert report.timed_out and report.signal == 9
    assert text(report.stdout) == "started\n"
    assert 2 <= outcome.duration_s < 8


def test_output_is_capped_and_counted(sandbox: DockerSandbox, owner: str) -> None:
    report = reported(run(sandbox, owner, "head -c 1000000 /dev/zero | tr '\\0' x"))
    assert report.stdout_bytes == 1_000_000
    assert len(base64.b64decode(report.stdout)) == LIMITS.output_bytes


def test_inputs_are_read_only_and_outputs_come_back(
    sandbox: DockerSandbox, owner: str, tmp_path: Path
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "MEMORY.md").write_text("- tides at 06:10\n")
    (inputs / "MEMORY.md").chmod(0o444)
    inputs.chmod(0o555)
    command = (
        "echo overwritten > /workspace/MEMORY.md 2>/dev/null || echo refused; "
        "(cat /workspace/MEMORY.md; echo '- tides at 18:40') > MEMORY.md; "
        "ln -s /etc/passwd USER.md"
    )
    report = reported(run(sandbox, owner, command, inputs=inputs, outputs=["MEMORY.md", "USER.md"]))
    assert text(report.stdout) == "refused\n"
    assert (inputs / "MEMORY.md").read_text() == "- tides at 06:10\n"
    assert base64.b64decode(report.outputs["MEMORY.md"]) == b"- tides at 06:10\n- tides at 18:40\n"
    assert report.missing == ["USER.md"], "a link is not followed out of the work folder"


def test_sandboxes_left_by_a_stopped_orchestrator_go_with_the_fleet(
    docker_client: Any, agent_image: ImageBuildResult, owner: str
) -> None:
    labels = {LABEL_SANDBOX_OF: f"{owner}/coder", LABEL_SANDBOX_FLEET: owner}
    left = docker_client.containers.create(agent_image.tag, entrypoint=["true"], labels=labels)
    other = docker_client.containers.create(
        agent_image.tag, entrypoint=["true"], labels={LABEL_SANDBOX_FLEET: f"{owner}-other"}
    )
    try:
        assert remove_sandboxes(docker_client, owner) == 1
        assert leftovers(docker_client, owner) == []
        other.reload()
    finally:
        for container in (left, other):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)

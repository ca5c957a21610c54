"""A two-node Docker Swarm made of two Docker-in-Docker containers, for tests of placement and
moves between nodes on one machine.

The nodes run Debian bookworm's own docker.io, installed from Debian's packages into the base
image the agent image is built on (no image is pulled). They sit on a bridge network made for
them; the swarm is initialised on the first one's address on it, so the host's own swarm is
left alone. The orchestrator runs on the host inside the first node's network namespace
(`nsenter --net`), where it reaches that node's engine on 127.0.0.1:2375 and listens on its
swarm gateway bridge, as it would on a manager node.

What the nodes need of the host: every capability but CAP_SYS_RESOURCE (which the host's own
bounding set may lack, so `--privileged` is not used), no seccomp or AppArmor profile, the
host's cgroup hierarchy writable (each node's containers under a cgroup parent of its own), and
/var/lib/docker on a volume (overlay2 does not stack on the host's overlay2).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker.errors

from orchestrator.testing.cli import run_flotilla, run_flotilla_ok

BASE_IMAGE = "flotilla/base:bookworm"
PACKAGES = (
    "containerd",
    "docker.io",
    "dmsetup",
    "iptables",
    "libdevmapper1.02.1",
    "libip4tc2",
    "libip6tc2",
    "libmnl0",
    "libnetfilter-conntrack3",
    "libnfnetlink0",
    "libnftnl11",
    "libxtables12",
    "lsb-base",
    "netbase",
    "runc",
    "tini",
)
APT_CACHE = Path("/var/cache/apt/archives")
DOCKERFILE = f"""FROM {BASE_IMAGE}
COPY debs /tmp/debs
RUN dpkg -i /tmp/debs/*.deb && rm -rf /tmp/debs \\
 && update-alternatives --set iptables /usr/sbin/iptables-legacy \\
 && update-alternatives --set ip6tables /usr/sbin/ip6tables-legacy
ENTRYPOINT ["dockerd", "--host=unix:///var/run/docker.sock", "--host=tcp://127.0.0.1:2375", "--storage-driver=overlay2"]
"""
NODE_IMAGE = (
    "flotilla-test/swarm-node:" + hashlib.sha256((DOCKERFILE + " ".join(PACKAGES)).encode()).hexdigest()[:12]
)
"""Kept between runs (made again when its recipe changes): building it takes most of a minute."""
CGROUPS = Path("/sys/fs/cgroup")
ENGINE_WAIT_S = 90.0
ENGINE_URL = "tcp://127.0.0.1:2375"


class NodesUnavailable(Exception):
    """The node image cannot be made here (Debian's packages cannot be had)."""


def _debs(into: Path) -> None:
    """Debian's packages for the node image: from apt's cache, the rest with `apt-get download`."""
    missing = []
    for package in PACKAGES:
        cached = sorted(APT_CACHE.glob(f"{package}_*.deb"))
        if cached:
            shutil.copy(cached[-1], into / cached[-1].name)
        else:
            missing.append(package)
    if missing:
        done = subprocess.run(
            ["apt-get", "download", *missing], cwd=into, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise NodesUnavailable(f"apt-get download {' '.join(missing)}: {done.stderr.strip()[-300:]}")


def node_image(client: Any, workdir: Path) -> str:
    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.get(NODE_IMAGE)
        return NODE_IMAGE
    context = workdir / "node-image"
    (context / "debs").mkdir(parents=True)
    _debs(context / "debs")
    (context / "Dockerfile").write_text(DOCKERFILE)
    client.images.build(path=str(context), tag=NODE_IMAGE, rm=True)
    return NODE_IMAGE


@dataclass
class Node:
    container: Any
    hostname: str

    @property
    def pid(self) -> int:
        self.container.reload()
        return int(self.container.attrs["State"]["Pid"])

    def address(self, network: str) -> str:
        self.container.reload()
        return str(self.container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"])

    def docker(self, *args: str, stdin: bytes | None = None, check: bool = True) -> str:
        """`docker ARGS` run against this node's engine."""
        done = subprocess.run(
            ["docker", "exec", "-i", self.container.id, "docker", *args],
            input=stdin,
            capture_output=True,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)} on {self.hostname}: {done.stderr.decode()}")
        return done.stdout.decode()

    def load(self, image: str) -> None:
        saved = subprocess.Popen(["docker", "save", image], stdout=subprocess.PIPE)
        try:
            loaded = subprocess.run(
                ["docker", "exec", "-i", self.container.id, "docker", "load", "-q"],
                stdin=saved.stdout,
                capture_output=True,
                check=False,
            )
        finally:
            assert saved.stdout is not None
            saved.stdout.close()
            saved.wait()
        assert loaded.returncode == 0, loaded.stderr.decode()


@dataclass
class TwoNodeSwarm:
    client: Any
    network: str
    nodes: list[Node] = field(default_factory=list)

    @property
    def manager(self) -> Node:
        return self.nodes[0]

    def start(self, image: str, prefix: str) -> None:
        self.client.networks.create(self.network, driver="bridge", labels={"io.flotilla.test": "swarm-nodes"})
        for number in (1, 2):
            hostname = f"{prefix}-node{number}"
            # The docker command line, not the SDK: the SDK has no `systempaths=unconfined`.
            started = subprocess.run(
                [
                    "docker", "run", "-d", "--name", hostname, "--hostname", hostname,
                    "--network", self.network, "--label", "io.flotilla.test=swarm-nodes",
                    "--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
                    "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
                    "--security-opt", "systempaths=unconfined",
                    "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "-v", "/var/lib/docker",
                    image, f"--cgroup-parent=/{hostname}",
                ],
                capture_output=True,
                text=True,
                check=False,
            )  # fmt: skip
            assert started.returncode == 0, started.stderr
            container = self.client.containers.get(started.stdout.strip())
            self.nodes.append(Node(container, hostname))
        for node in self.nodes:
            _wait_for_engine(node)
        address = self.manager.address(self.network)
        self.manager.docker("swarm", "init", "--advertise-addr", address)
        token = self.manager.docker("swarm", "join-token", "-q", "worker").strip()
        self.nodes[1].docker("swarm", "join", "--token", token, f"{address}:2377")

    def stop(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(docker.errors.APIError):
                node.container.remove(force=True, v=True)
        with contextlib.suppress(docker.errors.APIError):
            self.client.networks.get(self.network).remove()
        for node in self.nodes:
            _remove_cgroups(node.hostname)

    def flotilla(self, folder: Path, *args: str, check: bool = True, timeout: float = 300) -> str:
        """The `flotilla` command run in the manager's network namespace, against its engine."""
        env = {**os.environ, "DOCKER_HOST": ENGINE_URL}
        prefix = ("nsenter", f"--net=/proc/{self.manager.pid}/ns/net")
        run = run_flotilla_ok if check else run_flotilla
        return run(folder, *args, timeout=timeout, env=env, prefix=prefix).stdout

    def agents(self, folder: Path) -> dict[str, dict[str, Any]]:
        listed = json.loads(self.flotilla(folder, "ps", "--json"))
        return {agent["name"]: agent for agent in listed["agents"]}


def _remove_cgroups(parent: str) -> None:
    """The node's cgroup parent, left empty in the host's hierarchy once the node is gone."""
    for folder in CGROUPS.glob(f"*/{parent}"):
        for inner in sorted(folder.rglob("*"), key=lambda p: len(p.parts), reverse=True):
            if inner.is_dir():
                with contextlib.suppress(OSError):
                    inner.rmdir()
        with contextlib.suppress(OSError):
            folder.rmdir()


def _wait_for_engine(node: Node) -> None:
    deadline = time.monotonic() + ENGINE_WAIT_S
    while time.monotonic() < deadline:
        if node.docker("info", "--format", "{{.ServerVersion}}", check=False).strip():
            return
        time.sleep(0.5)
    node.container.reload()
    raise AssertionError(f"the engine of {node.hostname} did not start: {node.container.logs()[-2000:]!r}")

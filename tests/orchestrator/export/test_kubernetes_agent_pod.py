"""The Kubernetes export run as far as a machine without a cluster allows: the orchestrator on
the host in the external runtime, and the agent run exactly as its exported pod spec says (image,
command, environment, the token Secret mounted read-only, read-only root, uid 10001, capabilities
dropped, resources) as a Docker container on a network made here, dialing the host at the
network's gateway address. The pod spec is read from the written YAML, so the test fails when the
manifests drift from what an agent needs to run."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import pytest
import yaml
from docker.types import Mount

from orchestrator.images.build import DEFAULT_TAG, ImageBuildResult
from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import fleet_status, free_port, run_flotilla, start_flotilla, wait_for
from tests.docker_fixtures import unique

pytestmark = pytest.mark.docker

FLEET = """\
version: 1
fleet: {name}
llm:
  models:
    test: {{context_window: 16384}}
agents:
  pilot:
    role: guides ships
    resources: {{memory: 256m, cpus: 0.5, disk: 256m}}
"""
PREPARE_CLAIM = "import os, sys; os.chown('/v', 0, int(sys.argv[1])); os.chmod('/v', 0o2775)"


@dataclass
class Cluster:
    """What stands in for the cluster here: a network of its own and the containers run on it."""

    client: Any
    network: Any
    gateway: str
    made: list[Any]

    def run_pod(self, statefulset: dict[str, Any], secrets: dict[str, dict[str, str]], scratch: Path) -> Any:
        """Run the StatefulSet's pod as one container, field by field from its spec."""
        pod = statefulset["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        pod_security, security = pod["securityContext"], container["securityContext"]
        assert security["runAsNonRoot"] and pod_security["runAsUser"] != 0
        assert all("value" in entry for entry in container["env"]), "env only from plain values"
        volumes = {volume["name"]: volume for volume in pod["volumes"]}
        claims = {claim["metadata"]["name"] for claim in statefulset["spec"]["volumeClaimTemplates"]}
        mounts = [
            self._mount(mount, volumes, claims, secrets, scratch, pod_security["fsGroup"])
            for mount in container["volumeMounts"]
        ]
        limits = container["resources"]["limits"]
        name = f"{statefulset['metadata']['name']}-0-{unique('pod')}"
        run = self.client.containers.run(
            container["image"],
            entrypoint=container.get("command"),
            command=container.get("args"),
            name=name,
            environment={entry["name"]: entry["value"] for entry in container["env"]},
            user=f"{pod_security['runAsUser']}:{pod_security['runAsGroup']}",
            group_add=[str(pod_security["fsGroup"])],
            read_only=security["readOnlyRootFilesystem"],
            cap_drop=security["capabilities"]["drop"],
            security_opt=[] if security["allowPrivilegeEscalation"] else ["no-new-privileges:true"],
            privileged=security["privileged"],
            mem_limit=limits["memory"].replace("Mi", "m"),
            nano_cpus=int(limits["cpu"].removesuffix("m")) * 1_000_000,
            mounts=mounts,
            network=self.network.name,
            detach=True,
        )
        self.made.append(run)
        return run

    def _mount(
        self,
        mount: dict[str, Any],
        volumes: dict[str, dict[str, Any]],
        claims: set[str],
        secrets: dict[str, dict[str, str]],
        scratch: Path,
        fs_group: int,
    ) -> Mount:
        read_only = bool(mount.get("readOnly"))
        if mount["name"] in claims:
            # A fresh volume, as a new claim is; the kubelet gives it to fsGroup, as done here.
            volume = self.client.volumes.create(name=unique("claim"))
            self.made.append(volume)
            self.client.containers.run(
                DEFAULT_TAG,
                entrypoint=["python3", "-c", PREPARE_CLAIM, str(fs_group)],
                user="0:0",
                volumes={volume.name: {"bind": "/v", "mode": "rw"}},
                network_mode="none",
                remove=True,
            )
            return Mount(mount["mountPath"], volume.name, type="volume", read_only=read_only)
        volume = volumes[mount["name"]]
        if "secret" in volume:
            # The kubelet writes each key of the Secret as a file (root's, fsGroup's, defaultMode)
            # in a timestamped folder, and links KEY -> ..data/KEY -> that folder's file.
            folder = scratch / volume["secret"]["secretName"]
            stamped = folder / "..2026_01_01_00_00_00.000000001"
            stamped.mkdir(mode=0o755, parents=True)
            (folder / "..data").symlink_to(stamped.name)
            for key, value in secrets[volume["secret"]["secretName"]].items():
                path = stamped / key
                path.write_text(value)
                os.chown(path, 0, fs_group)
                path.chmod(volume["secret"]["defaultMode"])
                (folder / key).symlink_to(f"..data/{key}")
            return Mount(mount["mountPath"], str(folder), type="bind", read_only=read_only)
        if volume.get("emptyDir", {}).get("medium") == "Memory":
            size = volume["emptyDir"]["sizeLimit"].replace("Mi", "m")
            return Mount(mount["mountPath"], None, type="tmpfs", tmpfs_size=size)
        raise AssertionError(f"a volume this test does not know how to run: {volume}")


@pytest.fixture
def cluster(docker_client: Any) -> Iterator[Cluster]:
    network = docker_client.networks.create(unique("k8s"), driver="bridge", internal=True)
    network.reload()
    gateway = network.attrs["IPAM"]["Config"][0]["Gateway"]
    made: list[Any] = []
    try:
        yield Cluster(docker_client, network, gateway, made)
    finally:
        for thing in reversed(made):
            with contextlib.suppress(docker.errors.APIError):
                thing.remove(force=True)
        network.remove()


def _start_orchestrator(folder: Path, gateway: str, port: int) -> subprocess.Popen[str]:
    with (folder / "orchestrator.out").open("ab") as log:
        return start_flotilla(
            folder,
            "up",
            "--runtime",
            "external",
            "--agent-listen",
            gateway,
            "--port",
            str(port),
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def test_an_exported_agent_pod_checks_in_with_a_host_orchestrator_and_answers(
    cluster: Cluster, agent_image: ImageBuildResult, tmp_path: Path
) -> None:
    folder = tmp_path / "fleet"
    folder.mkdir()
    (folder / "fleet.yaml").write_text(FLEET.format(name=unique("kube")))
    paths = StatePaths.for_fleet_file(folder / "fleet.yaml")
    port = free_port()
    orchestrator = _start_orchestrator(folder, cluster.gateway, port)
    try:
        wait_for(lambda: read_endpoint(paths) is not None, "the orchestrator to listen", deadline_s=60)
        out = tmp_path / "manifests"
        exported = run_flotilla(
            folder,
            "export",
            "kubernetes",
            "-o",
            str(out),
            "--orchestrator-url",
            f"http://{cluster.gateway}:{port}",
            "--agent-image",
            DEFAULT_TAG,
        )
        assert exported.returncode == 0, exported.stdout + exported.stderr
        token = paths.token_file("pilot").read_text()
        assert token not in exported.stdout + exported.stderr

        service, statefulset = _documents(out / "30-agent-pilot.yaml")
        assert (
            service["kind"] == "Service" and statefulset["spec"]["serviceName"] == service["metadata"]["name"]
        )
        secrets = {doc["metadata"]["name"]: doc["stringData"] for doc in _documents(out / "05-secrets.yaml")}
        assert secrets["agent-pilot-token"]["token"] == token
        scratch = tmp_path / "kubelet"
        scratch.mkdir()
        pod = cluster.run_pod(statefulset, secrets, scratch)

        wait_for(
            lambda: fleet_status(folder)["pilot"]["health"] == "healthy",
            "the pod's agent to check in",
            deadline_s=90,
        )
        # The probes, run as the kubelet would (in the container, as its user), pass: the agent is
        # alive, and ready since the orchestrator accepted its check-in.
        container = statefulset["spec"]["template"]["spec"]["containers"][0]
        for probe in ("livenessProbe", "readinessProbe"):
            code, output = pod.exec_run(container[probe]["exec"]["command"])
            assert code == 0, (probe, output)
        # The agents' policy lets them reach the very address and port this agent dialed.
        policies = {
            doc["metadata"]["name"]: doc["spec"] for doc in _documents(out / "10-network-policies.yaml")
        }
        to_orchestrator = policies["agents-reach-only-the-orchestrator"]["egress"][0]
        assert to_orchestrator["to"] == [{"ipBlock": {"cidr": f"{cluster.gateway}/32"}}]
        assert to_orchestrator["ports"] == [{"protocol": "TCP", "port": port}]
        sent = run_flotilla(folder, "send", "pilot", "hello from the operator")
        assert sent.returncode == 0, sent.stdout + sent.stderr + pod.logs().decode()[-2000:]
        assert "[test model]" in sent.stdout and "hello from the operator" in sent.stdout

        # The orchestrator starts again: the agent keeps the token its Secret holds.
        _stop(orchestrator)
        orchestrator = _start_orchestrator(folder, cluster.gateway, port)
        wait_for(lambda: read_endpoint(paths) is not None, "the orchestrator to listen again", deadline_s=60)
        assert paths.token_file("pilot").read_text() == token
        wait_for(
            lambda: fleet_status(folder)["pilot"]["health"] == "healthy",
            "the agent to check in with the restarted orchestrator",
            deadline_s=90,
        )
        again = run_flotilla(folder, "send", "pilot", "still there?")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "still there?" in again.stdout
    finally:
        _stop(orchestrator)
        run_flotilla(folder, "down")

"""`flotilla export kubernetes`: every manifest valid against the official schemas of several
Kubernetes versions (offline), with the security fields the docker runtime enforces."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.loader import load_fleet
from orchestrator.export.kubernetes import (
    AGENT_PORT,
    LABEL_AGENT,
    LABEL_COMPONENT,
    ExportOptions,
    Manifest,
    render,
    write,
)

KUBERNETES_VERSIONS = ["1.35.0", "1.36.0", "1.37.0"]

FLEET = """\
fleet: harbour
defaults:
  resources: {memory: 96m, cpus: 0.25, disk: 512m}
agents:
  pilot:
    role: guides ships
    talks_to: [clerk]
  clerk:
    role: keeps records
    resources: {memory: 200m, cpus: 1.5, pids: 32, disk: 1g}
"""


@pytest.fixture
def fleet(tmp_path: Path) -> LoadedFleet:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET)
    return load_fleet(path)


@pytest.fixture
def objects(fleet: LoadedFleet) -> list[Manifest]:
    return render(fleet, ExportOptions(storage_class="fast")).objects()


def _of_kind(objects: list[Manifest], kind: str) -> list[Manifest]:
    return [obj for obj in objects if obj["kind"] == kind]


def _pod_specs(objects: list[Manifest]) -> list[tuple[str, dict[str, Any]]]:
    return [(o["metadata"]["name"], o["spec"]["template"]["spec"]) for o in _of_kind(objects, "StatefulSet")]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_manifest_is_valid_against_the_official_schema(objects: list[Manifest], version: str) -> None:
    kinds = set()
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)
        kinds.add(obj["kind"])
    assert kinds == {"Namespace", "Secret", "NetworkPolicy", "ConfigMap", "StatefulSet", "Service"}


def test_the_validator_does_refuse_a_broken_manifest(objects: list[Manifest]) -> None:
    """The schema check above can fail: a misspelt field under strict validation is refused."""
    broken = next(o for o in objects if o["kind"] == "StatefulSet")
    broken = {**broken, "spec": {**broken["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def test_every_pod_is_hardened_like_the_docker_runtime(objects: list[Manifest]) -> None:
    pods = _pod_specs(objects)
    assert len(pods) == 3  # orchestrator + two agents
    for name, pod in pods:
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for container in pod["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
            assert security["capabilities"] == {"drop": ["ALL"]}, name
            assert security["privileged"] is False, name
            assert "ports" not in container or name == "flotilla-orchestrator", name
            assert container["resources"]["limits"]["memory"], name


def test_agent_resources_and_volume_size_come_from_fleet_yaml(objects: list[Manifest]) -> None:
    by_agent = {o["metadata"]["labels"].get(LABEL_AGENT): o for o in _of_kind(objects, "StatefulSet")}
    clerk, pilot = by_agent["clerk"], by_agent["pilot"]
    clerk_container = clerk["spec"]["template"]["spec"]["containers"][0]
    assert clerk_container["resources"]["limits"] == {"memory": "200Mi", "cpu": "1500m"}
    assert pilot["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {
        "memory": "96Mi",
        "cpu": "250m",
    }
    (claim,) = clerk["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "1024Mi"
    assert claim["spec"]["storageClassName"] == "fast"
    (claim,) = pilot["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "512Mi"
    for obj in (clerk, pilot):
        assert obj["spec"]["replicas"] == 1


def test_each_agent_gets_its_own_token_secret_and_no_secret_in_its_environment(
    objects: list[Manifest],
) -> None:
    secrets = {s["metadata"]["name"]: s for s in _of_kind(objects, "Secret")}
    pilot_token = secrets["agent-pilot-token"]["stringData"]["token"]
    clerk_token = secrets["agent-clerk-token"]["stringData"]["token"]
    assert pilot_token != clerk_token
    assert len(pilot_token) >= 32
    accepted = secrets["flotilla-orchestrator-agent-tokens"]["stringData"]
    assert accepted == {"clerk": clerk_token, "pilot": pilot_token}
    for name, pod in _pod_specs(objects):
        rendered = yaml.safe_dump(pod["containers"])
        assert pilot_token not in rendered and clerk_token not in rendered, name
    pilot_pod = next(pod for name, pod in _pod_specs(objects) if name == "agent-pilot")
    volumes = {v["name"]: v for v in pilot_pod["volumes"]}
    assert volumes["token"]["secret"]["secretName"] == "agent-pilot-token"


def test_network_policies_let_agents_reach_only_the_orchestrator(objects: list[Manifest]) -> None:
    policies = {p["metadata"]["name"]: p["spec"] for p in _of_kind(objects, "NetworkPolicy")}
    deny = policies["default-deny"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    agents = policies["agents-reach-only-the-orchestrator"]
    assert agents["podSelector"]["matchLabels"][LABEL_COMPONENT] == "agent"
    assert agents["ingress"] == []  # nothing reaches an agent
    to_orchestrator, dns = agents["egress"]
    assert to_orchestrator["to"] == [
        {"podSelector": {"matchLabels": {"flotilla.dev/fleet": "harbour", LABEL_COMPONENT: "orchestrator"}}}
    ]
    assert to_orchestrator["ports"] == [{"protocol": "TCP", "port": AGENT_PORT}]
    assert {p["port"] for p in dns["ports"]} == {53}
    assert dns["to"][0]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "kube-system"}
    inbound = policies["orchestrator-accepts-agents"]
    assert inbound["ingress"][0]["ports"] == [{"protocol": "TCP", "port": AGENT_PORT}]
    # Every agent is selected by the agents' policy.
    for obj in _of_kind(objects, "StatefulSet"):
        labels = obj["spec"]["template"]["metadata"]["labels"]
        if labels[LABEL_COMPONENT] == "agent":
            assert all(labels[k] == v for k, v in agents["podSelector"]["matchLabels"].items())


def test_the_namespace_enforces_the_restricted_pod_security_standard(objects: list[Manifest]) -> None:
    (namespace,) = _of_kind(objects, "Namespace")
    assert namespace["metadata"]["name"] == "flotilla-harbour"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert all(o["metadata"].get("namespace") == "flotilla-harbour" for o in objects if o is not namespace)


def test_write_keeps_secrets_private_and_lists_every_file(fleet: LoadedFleet, tmp_path: Path) -> None:
    out = tmp_path / "out"
    manifests = render(fleet, ExportOptions())
    write(manifests, out)
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kustomization["resources"] == list(manifests.files)
    for name in manifests.files:
        text = (out / name).read_text()
        assert "&id" not in text and "*id" not in text  # no YAML aliases
        assert list(yaml.safe_load_all(text)) == manifests.files[name]
    assert stat.S_IMODE((out / "05-secrets.yaml").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "00-namespace.yaml").stat().st_mode) & 0o077 != 0o000


def test_cli_writes_the_manifests_and_refuses_an_invalid_fleet(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    runner = CliRunner()
    result = runner.invoke(
        cli, ["export", "kubernetes", "-f", str(tmp_path / "fleet.yaml"), "-o", str(tmp_path / "k8s")]
    )
    assert result.exit_code == 0, result.output
    assert "kubectl apply -k" in result.output
    assert (tmp_path / "k8s" / "30-agent-pilot.yaml").is_file()
    (tmp_path / "bad.yaml").write_text("fleet: Not_A_Label\nagents: {a: {}}\n")
    result = runner.invoke(
        cli, ["export", "kubernetes", "-f", str(tmp_path / "bad.yaml"), "-o", str(tmp_path / "k8s2")]
    )
    assert result.exit_code == 2
    assert not (tmp_path / "k8s2").exists()


MCP_FLEET = (
    FLEET
    + """\
    tools:
      mcp:
        - name: time
          package: mcp-server-time
          command: [python3, -m, mcp_server_time]
"""
)


def test_images_are_pulled_again_unless_pinned(fleet: LoadedFleet) -> None:
    moving = ExportOptions(agent_image="flotilla/agent:latest", orchestrator_image="flotilla/orchestrator")
    for _, pod in _pod_specs(render(fleet, moving).objects()):
        for container in pod["containers"]:
            assert container["imagePullPolicy"] == "Always"
    pinned = render(fleet, ExportOptions(agent_image="registry.example/flotilla/agent:0.4.1")).objects()
    agents = [pod for name, pod in _pod_specs(pinned) if name.startswith("agent-")]
    assert {pod["containers"][0]["imagePullPolicy"] for pod in agents} == {"IfNotPresent"}


def test_the_orchestrator_reaches_providers_but_not_the_metadata_service(objects: list[Manifest]) -> None:
    policies = {p["metadata"]["name"]: p["spec"] for p in _of_kind(objects, "NetworkPolicy")}
    providers, dns = policies["orchestrator-reaches-providers"]["egress"]
    blocks = {rule["ipBlock"]["cidr"]: rule["ipBlock"]["except"] for rule in providers["to"]}
    assert "169.254.0.0/16" in blocks["0.0.0.0/0"] and "fd00:ec2::254/128" in blocks["::/0"]
    assert {p["port"] for p in dns["ports"]} == {53}
    # DNS: whatever serves it in kube-system, not only pods labelled k8s-app=kube-dns.
    agents_dns = policies["agents-reach-only-the-orchestrator"]["egress"][1]
    assert agents_dns["to"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    ]


def test_provider_keys_reach_the_orchestrator_from_a_secret(objects: list[Manifest]) -> None:
    (orchestrator,) = [pod for name, pod in _pod_specs(objects) if name == "flotilla-orchestrator"]
    assert orchestrator["containers"][0]["envFrom"] == [
        {"secretRef": {"name": "flotilla-provider-keys", "optional": True}}
    ]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_an_agent_with_mcp_packages_runs_the_extension_image(tmp_path: Path, version: str) -> None:
    (tmp_path / "fleet.yaml").write_text(MCP_FLEET)
    fleet = load_fleet(tmp_path / "fleet.yaml")
    with pytest.raises(ValueError, match="give --extension-image"):
        render(fleet, ExportOptions())
    extended = "registry.example/flotilla/agent:0.4.1-ext-abc"
    objects = render(fleet, ExportOptions(extension_image=extended)).objects()
    images = {name: pod["containers"][0]["image"] for name, pod in _pod_specs(objects)}
    assert images["agent-clerk"] == extended and images["agent-pilot"] == ExportOptions().agent_image
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)
    refused = CliRunner().invoke(
        cli, ["export", "kubernetes", "-f", str(tmp_path / "fleet.yaml"), "-o", str(tmp_path / "k8s")]
    )
    assert refused.exit_code == 1 and "--extension-image" in str(refused.exception)
    assert not (tmp_path / "k8s").exists()

"""`flotilla export kubernetes`: every manifest valid against the official schemas of several
Kubernetes versions (offline), with the security fields the docker runtime enforces, the tokens
the orchestrator minted, and egress only to the orchestrator's address."""

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
    LABEL_AGENT,
    LABEL_COMPONENT,
    ExportOptions,
    ExportRefused,
    Manifest,
    image_warnings,
    orchestrator_address,
    read_tokens,
    render,
    write,
)
from orchestrator.fleet.scaffold import write_token
from orchestrator.state.paths import StatePaths

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


ORCHESTRATOR = orchestrator_address("http://192.0.2.10:8420")
MOVING = "flotilla/agent:latest"


def _minted(path: Path) -> dict[str, str]:
    """Tokens as `up --runtime external` leaves them in the fleet's state folder."""
    paths = StatePaths.for_fleet_file(path)
    tokens = {"pilot": "pilot-" + "p" * 40, "clerk": "clerk-" + "c" * 40}
    for agent, token in tokens.items():
        write_token(paths, agent, token)
    return tokens


@pytest.fixture
def fleet(tmp_path: Path) -> LoadedFleet:
    path = tmp_path / "fleet.yaml"
    path.write_text(FLEET)
    _minted(path)
    return load_fleet(path)


def _options(**fields: Any) -> ExportOptions:
    """With the image by its moving tag whatever FLOTILLA_IMAGE says (the default follows it)."""
    return ExportOptions(orchestrator=ORCHESTRATOR, **({"agent_image": MOVING} | fields))


@pytest.fixture
def objects(fleet: LoadedFleet) -> list[Manifest]:
    return render(fleet, _options(storage_class="fast"), read_tokens(fleet)).objects()


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
    assert kinds == {"Namespace", "Secret", "NetworkPolicy", "Service", "StatefulSet"}


def test_the_validator_does_refuse_a_broken_manifest(objects: list[Manifest]) -> None:
    """The schema check above can fail: a misspelt field under strict validation is refused."""
    broken = next(o for o in objects if o["kind"] == "StatefulSet")
    broken = {**broken, "spec": {**broken["spec"], "replica": 1}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSIONS[-1], strict=True)


def test_every_pod_is_hardened_like_the_docker_runtime(objects: list[Manifest]) -> None:
    pods = _pod_specs(objects)
    assert sorted(name for name, _ in pods) == ["agent-clerk", "agent-pilot"]  # no orchestrator
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
            assert "ports" not in container, name
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


def test_each_agent_gets_the_token_the_orchestrator_minted_and_no_secret_in_its_environment(
    objects: list[Manifest], fleet: LoadedFleet
) -> None:
    secrets = {s["metadata"]["name"]: s for s in _of_kind(objects, "Secret")}
    assert sorted(secrets) == ["agent-clerk-token", "agent-pilot-token"]
    pilot_token = secrets["agent-pilot-token"]["stringData"]["token"]
    clerk_token = secrets["agent-clerk-token"]["stringData"]["token"]
    paths = StatePaths.for_fleet_file(fleet.path)
    assert pilot_token == paths.token_file("pilot").read_text()
    assert clerk_token == paths.token_file("clerk").read_text()
    for name, pod in _pod_specs(objects):
        rendered = yaml.safe_dump(pod["containers"])
        assert pilot_token not in rendered and clerk_token not in rendered, name
    pilot_pod = next(pod for name, pod in _pod_specs(objects) if name == "agent-pilot")
    volumes = {v["name"]: v for v in pilot_pod["volumes"]}
    assert volumes["token"]["secret"]["secretName"] == "agent-pilot-token"


def test_network_policies_let_agents_reach_only_the_orchestrator(objects: list[Manifest]) -> None:
    policies = {p["metadata"]["name"]: p["spec"] for p in _of_kind(objects, "NetworkPolicy")}
    assert sorted(policies) == ["agents-reach-only-the-orchestrator", "default-deny"]
    deny = policies["default-deny"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    agents = policies["agents-reach-only-the-orchestrator"]
    assert agents["podSelector"]["matchLabels"][LABEL_COMPONENT] == "agent"
    assert agents["ingress"] == []  # nothing reaches an agent
    to_orchestrator, dns = agents["egress"]
    assert to_orchestrator["to"] == [{"ipBlock": {"cidr": "192.0.2.10/32"}}]  # no except: one address
    assert to_orchestrator["ports"] == [{"protocol": "TCP", "port": 8420}]
    # DNS: whatever serves it in kube-system, not only pods labelled k8s-app=kube-dns; port 53 only.
    assert {p["port"] for p in dns["ports"]} == {53}
    assert dns["to"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}
    ]
    # Every agent is selected by the agents' policy, and dials the address the policy allows.
    for obj in _of_kind(objects, "StatefulSet"):
        labels = obj["spec"]["template"]["metadata"]["labels"]
        assert all(labels[k] == v for k, v in agents["podSelector"]["matchLabels"].items())
        pod = obj["spec"]["template"]["spec"]
        env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
        assert env["FLOTILLA_URL"] == "http://192.0.2.10:8420"
        assert pod["dnsPolicy"] == "ClusterFirst"


def test_an_ipv6_orchestrator_gets_a_single_address_block() -> None:
    assert orchestrator_address("http://[2001:db8::5]:9000").cidr == "2001:db8::5/128"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("http://orchestrator.example:8420", "by IP address"),
        ("http://192.0.2.10", "give the port"),
        ("192.0.2.10:8420", "http://ADDRESS:PORT"),
        ("http://192.0.2.10:8420/api", "no path"),
        ("http://192.0.2.10:99999", "give the port"),
    ],
)
def test_an_orchestrator_url_the_policy_cannot_name_is_refused(url: str, says: str) -> None:
    with pytest.raises(ExportRefused, match=says):
        orchestrator_address(url)


def test_the_namespace_enforces_the_restricted_pod_security_standard(objects: list[Manifest]) -> None:
    (namespace,) = _of_kind(objects, "Namespace")
    assert namespace["metadata"]["name"] == "flotilla-harbour"
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert all(o["metadata"].get("namespace") == "flotilla-harbour" for o in objects if o is not namespace)


def test_write_keeps_secrets_private_and_lists_every_file(fleet: LoadedFleet, tmp_path: Path) -> None:
    out = tmp_path / "out"
    manifests = render(fleet, _options(), read_tokens(fleet))
    write(manifests, out)
    kustomization = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert kustomization["resources"] == list(manifests.files)
    for name in manifests.files:
        text = (out / name).read_text()
        assert "&id" not in text and "*id" not in text  # no YAML aliases
        assert list(yaml.safe_load_all(text)) == manifests.files[name]
    assert stat.S_IMODE((out / "05-secrets.yaml").stat().st_mode) == 0o600
    assert stat.S_IMODE((out / "00-namespace.yaml").stat().st_mode) & 0o077 != 0o000


def _export(folder: Path, *extra: str, file: str = "fleet.yaml", out: str = "k8s") -> Any:
    args = ["export", "kubernetes", "-f", str(folder / file), "-o", str(folder / out), *extra]
    return CliRunner().invoke(cli, args)


def test_cli_writes_the_manifests_and_refuses_an_invalid_fleet(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    tokens = _minted(tmp_path / "fleet.yaml")
    result = _export(tmp_path, "--orchestrator-url", "http://192.0.2.10:8420")
    assert result.exit_code == 0, result.output
    assert "kubectl apply -k" in result.output
    assert all(token not in result.output for token in tokens.values())
    assert (tmp_path / "k8s" / "30-agent-pilot.yaml").is_file()
    assert not (tmp_path / "k8s" / "20-orchestrator.yaml").exists()
    (tmp_path / "bad.yaml").write_text("fleet: Not_A_Label\nagents: {a: {}}\n")
    result = _export(tmp_path, "--orchestrator-url", "http://192.0.2.10:8420", file="bad.yaml", out="k8s2")
    assert result.exit_code == 2
    assert not (tmp_path / "k8s2").exists()


def test_cli_refuses_before_the_orchestrator_minted_the_tokens(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    result = _export(tmp_path, "--orchestrator-url", "http://192.0.2.10:8420")
    assert result.exit_code == 1
    assert "no token yet for pilot, clerk" in str(result.exception)
    assert "flotilla up --runtime external --agent-listen" in str(result.exception)
    assert not (tmp_path / "k8s").exists()


def test_cli_needs_the_orchestrator_url_and_names_a_bad_one(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    _minted(tmp_path / "fleet.yaml")
    missing = _export(tmp_path)
    assert missing.exit_code == 2 and "--orchestrator-url" in missing.output
    named = _export(tmp_path, "--orchestrator-url", "http://flotilla.internal:8420")
    assert named.exit_code == 1 and "by IP address" in str(named.exception)
    assert not (tmp_path / "k8s").exists()


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


def test_images_are_pulled_once_by_each_node_whatever_their_tag(
    objects: list[Manifest], fleet: LoadedFleet
) -> None:
    for _, pod in _pod_specs(objects):
        for container in pod["containers"]:
            assert container["image"].endswith(":latest") and container["imagePullPolicy"] == "IfNotPresent"
    for image in (
        "registry.example/flotilla/agent:0.4.1",
        "registry.example/flotilla/agent@sha256:" + "a" * 64,
    ):
        pinned = render(fleet, _options(agent_image=image), read_tokens(fleet))
        assert {pod["containers"][0]["image"] for _, pod in _pod_specs(pinned.objects())} == {image}
        assert {pod["containers"][0]["imagePullPolicy"] for _, pod in _pod_specs(pinned.objects())} == {
            "IfNotPresent"
        }


def test_an_unpinned_image_is_warned_of_and_a_pinned_one_is_not(fleet: LoadedFleet) -> None:
    for moving in (MOVING, "registry.example:5000/flotilla/agent", "agent"):
        [warning] = image_warnings(fleet, _options(agent_image=moving))
        assert moving in warning and "IfNotPresent" in warning and "digest" in warning
    for pinned in ("registry.example:5000/flotilla/agent:0.4.1", "agent@sha256:" + "b" * 64):
        assert image_warnings(fleet, _options(agent_image=pinned)) == []


def test_each_statefulset_names_a_headless_service_that_selects_its_pod(objects: list[Manifest]) -> None:
    services = {obj["metadata"]["name"]: obj for obj in _of_kind(objects, "Service")}
    statefulsets = _of_kind(objects, "StatefulSet")
    assert len(services) == len(statefulsets) == 2
    for statefulset in statefulsets:
        service = services[statefulset["spec"]["serviceName"]]
        assert service["metadata"]["namespace"] == statefulset["metadata"]["namespace"]
        assert service["spec"]["clusterIP"] == "None" and "ports" not in service["spec"]
        pod_labels = statefulset["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= pod_labels.items()
        assert service["spec"]["selector"] == statefulset["spec"]["selector"]["matchLabels"]


def test_each_agent_is_ready_only_once_its_orchestrator_accepted_a_check_in(objects: list[Manifest]) -> None:
    for _, pod in _pod_specs(objects):
        [container] = pod["containers"]
        assert container["readinessProbe"]["exec"]["command"] == [
            "python3",
            "-m",
            "agent_runtime.health",
            "--ready",
        ]
        assert container["livenessProbe"]["exec"]["command"] == ["python3", "-m", "agent_runtime.health"]


def test_the_export_warns_of_a_moving_tag(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    _minted(tmp_path / "fleet.yaml")
    moving = _export(
        tmp_path, "--orchestrator-url", "http://192.0.2.10:8420", "--agent-image", MOVING, "--json"
    )
    assert moving.exit_code == 0, moving.output
    assert "moving tag" in moving.output
    pinned = _export(
        tmp_path,
        "--orchestrator-url",
        "http://192.0.2.10:8420",
        "--agent-image",
        "registry.example/flotilla/agent:0.4.1",
    )
    assert pinned.exit_code == 0 and "warning" not in pinned.output


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_an_agent_with_mcp_packages_runs_the_extension_image(tmp_path: Path, version: str) -> None:
    (tmp_path / "fleet.yaml").write_text(MCP_FLEET)
    tokens = _minted(tmp_path / "fleet.yaml")
    fleet = load_fleet(tmp_path / "fleet.yaml")
    with pytest.raises(ValueError, match="give --extension-image"):
        render(fleet, _options(), tokens)
    extended = "registry.example/flotilla/agent:0.4.1-ext-abc"
    objects = render(fleet, _options(extension_image=extended), tokens).objects()
    images = {name: pod["containers"][0]["image"] for name, pod in _pod_specs(objects)}
    assert images["agent-clerk"] == extended and images["agent-pilot"].endswith("/agent:latest")
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)
    refused = _export(tmp_path, "--orchestrator-url", "http://192.0.2.10:8420")
    assert refused.exit_code == 1 and "--extension-image" in str(refused.exception)
    assert not (tmp_path / "k8s").exists()

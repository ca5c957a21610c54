"""Kubernetes manifests for a fleet's agents: the same hardening and boundaries as the docker runtime.

The orchestrator stays where `flotilla up --runtime external` runs it, on a host outside the
cluster; the cluster runs the agents, which dial it. One namespace per fleet holds, per agent, a
StatefulSet of one with its own volume and the headless Service that names its pod, a Secret with
the token the orchestrator minted for it and the container security settings the docker runtime
uses. NetworkPolicies deny everything in the namespace, then let agents reach only the
orchestrator's address and port (and cluster DNS); nothing reaches an agent.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address, ip_address
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.models import ResourcesConfig
from orchestrator.images.names import DEFAULT_IMAGE
from orchestrator.state.paths import StatePaths

Manifest = dict[str, Any]

AGENT_UID = 10001
DATA_PATH = "/data"
TOKEN_DIR = "/run/flotilla"
TOKEN_KEY = "token"
LABEL_FLEET = "flotilla.dev/fleet"
LABEL_COMPONENT = "flotilla.dev/component"
LABEL_AGENT = "flotilla.dev/agent"
_MIB = 1024 * 1024


class ExportRefused(ValueError):
    """The fleet cannot be exported as asked; the message says what to give."""


@dataclass(frozen=True)
class OrchestratorAddress:
    """Where the agents' pods dial the orchestrator: an IP address, so that a NetworkPolicy can
    let them reach that address alone."""

    url: str
    ip: IPv4Address | IPv6Address
    port: int

    @property
    def cidr(self) -> str:
        return f"{self.ip}/{self.ip.max_prefixlen}"


def orchestrator_address(url: str) -> OrchestratorAddress:
    """Parse --orchestrator-url; ExportRefused naming what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ExportRefused(
            f"--orchestrator-url {url!r}: give http://ADDRESS:PORT (the host's agent address)"
        )
    try:
        ip = ip_address(parts.hostname)
    except ValueError:
        raise ExportRefused(
            f"--orchestrator-url {url!r}: name the orchestrator by IP address, not by name; the agents' "
            "NetworkPolicy lets them reach that one address"
        ) from None
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is None:
        raise ExportRefused(
            f"--orchestrator-url {url!r}: give the port the orchestrator listens on (`up --port`, 1-65535)"
        )
    if parts.path not in ("", "/") or parts.query:
        raise ExportRefused(f"--orchestrator-url {url!r}: give only http://ADDRESS:PORT, no path")
    return OrchestratorAddress(f"{parts.scheme}://{parts.netloc}", ip, port)


@dataclass(frozen=True)
class ExportOptions:
    orchestrator: OrchestratorAddress
    agent_image: str = DEFAULT_IMAGE
    storage_class: str | None = None
    namespace: str | None = None
    extension_image: str | None = None
    """The agent image extended with the fleet's MCP packages (`flotilla image status` names it),
    pushed where the cluster pulls from: run by the agents whose servers need those packages."""


def is_pinned(image: str) -> bool:
    """Whether the reference names one build: a digest, or a tag other than `latest`."""
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return True
    _, _, tag = name.partition(":")
    return tag not in ("", "latest")


def agent_image_of(fleet: LoadedFleet, agent: str, options: ExportOptions) -> str:
    """The image `agent` runs: the extension when one of its MCP servers names a package."""
    if not any(server.package for server in fleet.config.agents[agent].tools.mcp):
        return options.agent_image
    if options.extension_image is None:
        raise ExportRefused(
            f"agent {agent!r} runs MCP servers from packages, which the agent image {options.agent_image} "
            "does not hold: give --extension-image, the agent image extended with the fleet's packages "
            "(`flotilla up` builds it; `flotilla image status` names it), pushed where the cluster pulls"
        )
    return options.extension_image


@dataclass(frozen=True)
class ManifestSet:
    """File name -> the objects it holds. Secrets are kept apart so they can be handled apart."""

    files: dict[str, list[Manifest]]
    secret_files: frozenset[str]

    def objects(self) -> list[Manifest]:
        return [obj for objects in self.files.values() for obj in objects]


def namespace_of(fleet: LoadedFleet, options: ExportOptions) -> str:
    return options.namespace or f"flotilla-{fleet.name}"


def agent_object_name(agent: str) -> str:
    return f"agent-{agent}"


def quantity(size_bytes: int) -> str:
    """Bytes as a Kubernetes quantity, in Mi when exact."""
    return f"{size_bytes // _MIB}Mi" if size_bytes % _MIB == 0 else str(size_bytes)


def _millicores(cpus: float) -> str:
    return f"{max(round(cpus * 1000), 1)}m"


def _labels(fleet: LoadedFleet, component: str, agent: str | None = None) -> dict[str, str]:
    labels = {
        "app.kubernetes.io/name": "flotilla",
        "app.kubernetes.io/part-of": fleet.name,
        LABEL_FLEET: fleet.name,
        LABEL_COMPONENT: component,
    }
    if agent is not None:
        labels[LABEL_AGENT] = agent
    return labels


def _meta(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": labels}


def _pod_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": AGENT_UID,
        "runAsGroup": AGENT_UID,
        "fsGroup": AGENT_UID,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _container_security() -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "privileged": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _resources(resources: ResourcesConfig) -> dict[str, Any]:
    memory = quantity(resources.memory_bytes)
    cpu = _millicores(resources.cpus)
    return {"requests": {"memory": memory, "cpu": cpu}, "limits": {"memory": memory, "cpu": cpu}}


def _claim(name: str, size: str, storage_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"metadata": {"name": name}, "spec": spec}


def _tmp_volume() -> dict[str, Any]:
    return {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}


def _namespace(fleet: LoadedFleet, namespace: str) -> Manifest:
    labels = _labels(fleet, "namespace") | {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/audit": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace, "labels": labels}}


def _token_secret(fleet: LoadedFleet, namespace: str, agent: str, token: str) -> Manifest:
    name = f"{agent_object_name(agent)}-token"
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(name, namespace, _labels(fleet, "agent-token", agent)),
        "type": "Opaque",
        "stringData": {TOKEN_KEY: token},
    }


def _agent_container(fleet: LoadedFleet, agent: str, options: ExportOptions) -> dict[str, Any]:
    """The environment the docker runtime gives an agent, with the orchestrator's URL as given."""
    resources = fleet.config.resources_of(agent)
    url = options.orchestrator.url
    return {
        "name": "agent",
        "image": agent_image_of(fleet, agent, options),
        # A node pulls the image once; what it runs is the operator's to pin (see image_warnings).
        # The default image is built on the host and loaded onto nodes, not pulled from a registry.
        "imagePullPolicy": "IfNotPresent",
        "env": [
            {"name": "FLOTILLA_URL", "value": url},
            {"name": "FLOTILLA_AGENT", "value": agent},
            {"name": "FLOTILLA_DATA", "value": DATA_PATH},
            {"name": "FLOTILLA_BEARER_FILE", "value": f"{TOKEN_DIR}/{TOKEN_KEY}"},
        ],
        "securityContext": _container_security(),
        "resources": _resources(resources),
        "livenessProbe": {
            "exec": {"command": ["python3", "-m", "agent_runtime.health"]},
            "initialDelaySeconds": 10,
            "periodSeconds": 30,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
        },
        # Ready once the orchestrator accepted a check-in: a pod that cannot reach it is not ready.
        "readinessProbe": {
            "exec": {"command": ["python3", "-m", "agent_runtime.health", "--ready"]},
            "initialDelaySeconds": 2,
            "periodSeconds": 10,
            "timeoutSeconds": 5,
            "failureThreshold": 3,
        },
        "volumeMounts": [
            {"name": "data", "mountPath": DATA_PATH},
            {"name": "token", "mountPath": TOKEN_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def _selector(fleet: LoadedFleet, agent: str) -> dict[str, str]:
    return {LABEL_FLEET: fleet.name, LABEL_AGENT: agent}


def _headless_service(fleet: LoadedFleet, namespace: str, agent: str) -> Manifest:
    """The Service a StatefulSet names (`serviceName`): it gives the pod its stable DNS name. It
    has no cluster address and no port: nothing dials an agent (the NetworkPolicy refuses it)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(agent_object_name(agent), namespace, _labels(fleet, "agent-service", agent)),
        "spec": {"clusterIP": "None", "selector": _selector(fleet, agent)},
    }


def _agent(fleet: LoadedFleet, namespace: str, agent: str, options: ExportOptions) -> Manifest:
    name = agent_object_name(agent)
    labels = _labels(fleet, "agent", agent)
    selector = _selector(fleet, agent)
    disk = quantity(fleet.config.resources_of(agent).disk_bytes)
    pod_spec = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        # The cluster's resolver (reached under the NetworkPolicy's DNS rule), never the node's.
        "dnsPolicy": "ClusterFirst",
        "securityContext": _pod_security(),
        "containers": [_agent_container(fleet, agent, options)],
        "volumes": [
            {"name": "token", "secret": {"secretName": f"{name}-token", "defaultMode": 0o440}},
            _tmp_volume(),
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(name, namespace, labels),
        "spec": {
            "replicas": 1,
            "serviceName": name,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            "volumeClaimTemplates": [_claim("data", disk, options.storage_class)],
        },
    }


def _network_policies(
    fleet: LoadedFleet, namespace: str, orchestrator: OrchestratorAddress
) -> list[Manifest]:
    agents = {"matchLabels": {LABEL_FLEET: fleet.name, LABEL_COMPONENT: "agent"}}
    labels = _labels(fleet, "network-policy")
    # Whatever serves DNS in kube-system (CoreDNS, kube-dns, NodeLocal DNSCache's pods, whatever
    # their labels), on port 53 only.
    dns = {
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }
    to_orchestrator = {
        "to": [{"ipBlock": {"cidr": orchestrator.cidr}}],
        "ports": [{"protocol": "TCP", "port": orchestrator.port}],
    }

    def policy(name: str, spec: dict[str, Any]) -> Manifest:
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _meta(name, namespace, labels),
            "spec": spec,
        }

    return [
        policy("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
        policy(
            "agents-reach-only-the-orchestrator",
            {
                "podSelector": agents,
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [],
                "egress": [to_orchestrator, dns],
            },
        ),
    ]


def render(fleet: LoadedFleet, options: ExportOptions, tokens: dict[str, str]) -> ManifestSet:
    """Every object of the fleet, grouped by the file it goes in. `tokens`: each agent's token
    as the orchestrator holds it (`read_tokens`)."""
    namespace = namespace_of(fleet, options)
    agents = list(fleet.config.agents)
    files: dict[str, list[Manifest]] = {
        "00-namespace.yaml": [_namespace(fleet, namespace)],
        "10-network-policies.yaml": _network_policies(fleet, namespace, options.orchestrator),
    }
    for agent in agents:
        files[f"30-{agent_object_name(agent)}.yaml"] = [
            _headless_service(fleet, namespace, agent),
            _agent(fleet, namespace, agent, options),
        ]
    secrets_file = "05-secrets.yaml"
    files[secrets_file] = [_token_secret(fleet, namespace, agent, tokens[agent]) for agent in agents]
    return ManifestSet(files=dict(sorted(files.items())), secret_files=frozenset({secrets_file}))


def read_tokens(fleet: LoadedFleet) -> dict[str, str]:
    """Each agent's token as the fleet's orchestrator minted it (`flotilla up --runtime external`
    mints them and keeps them while the agents run elsewhere). Never printed."""
    paths = StatePaths.for_fleet_file(fleet.path)
    tokens: dict[str, str] = {}
    missing = []
    for agent in fleet.config.agents:
        try:
            tokens[agent] = paths.token_file(agent).read_text(encoding="ascii").strip()
        except FileNotFoundError:
            missing.append(agent)
    if missing:
        raise ExportRefused(
            f"no token yet for {', '.join(missing)}: start the orchestrator first, "
            "`flotilla up --runtime external --agent-listen ADDRESS` (it mints the agents' tokens), "
            "then export"
        )
    return tokens


def image_warnings(fleet: LoadedFleet, options: ExportOptions) -> list[str]:
    """An image by a moving tag is whatever copy each node holds: nodes may run different code."""
    images = sorted({agent_image_of(fleet, agent, options) for agent in fleet.config.agents})
    return [
        f"image {image} has a moving tag, not a pinned one: each node runs the copy it already holds "
        "(imagePullPolicy: IfNotPresent), which may be older code than another node's; push the image "
        "with a version tag (--agent-image REGISTRY/flotilla/agent:VERSION) or give it by digest "
        "(...@sha256:DIGEST)"
        for image in images
        if not is_pinned(image)
    ]


class _PlainDumper(yaml.SafeDumper):
    """No anchors or aliases: manifests read plainly and every tool accepts them."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def write(manifests: ManifestSet, out_dir: Path) -> list[Path]:
    """Write one YAML stream per file plus a kustomization listing them; secrets get mode 0600."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, objects in manifests.files.items():
        path = out_dir / name
        path.write_text(yaml.dump_all(objects, Dumper=_PlainDumper, sort_keys=False), encoding="utf-8")
        if name in manifests.secret_files:
            path.chmod(0o600)
        written.append(path)
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": list(manifests.files),
    }
    path = out_dir / "kustomization.yaml"
    path.write_text(yaml.safe_dump(kustomization, sort_keys=False), encoding="utf-8")
    return [*written, path]

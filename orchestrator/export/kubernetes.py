"""Kubernetes manifests for a fleet: the same hardening and boundaries as the docker runtime.

One namespace per fleet holds the orchestrator (a StatefulSet of one, with a volume for its
state and a Service on its agent port) and, per agent, a StatefulSet of one with its own
volume, a Secret for its token and the container security settings the docker runtime uses.
NetworkPolicies deny everything in the namespace, then let agents reach only the orchestrator
(and cluster DNS to find it); nothing reaches an agent.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from orchestrator.config.fleet import LoadedFleet
from orchestrator.config.models import ResourcesConfig
from orchestrator.images.names import DEFAULT_IMAGE

Manifest = dict[str, Any]

AGENT_UID = 10001
AGENT_PORT = 8420
DATA_PATH = "/data"
TOKEN_DIR = "/run/flotilla"
TOKEN_KEY = "token"
ORCHESTRATOR_NAME = "flotilla-orchestrator"
ORCHESTRATOR_STATE = "/var/lib/flotilla"
DEFAULT_ORCHESTRATOR_IMAGE = "flotilla/orchestrator:latest"
LABEL_FLEET = "flotilla.dev/fleet"
LABEL_COMPONENT = "flotilla.dev/component"
LABEL_AGENT = "flotilla.dev/agent"
_MIB = 1024 * 1024


PROVIDER_KEYS_SECRET = "flotilla-provider-keys"
# Addresses the orchestrator's egress never reaches: link-local (cloud metadata services at
# 169.254.169.254, node-local agents) and the other clouds' metadata addresses.
METADATA_BLOCKS_V4 = ["169.254.0.0/16", "100.100.100.200/32"]
METADATA_BLOCKS_V6 = ["fe80::/10", "fd00:ec2::254/128"]


class ExportRefused(ValueError):
    """The fleet cannot be exported as asked; the message says what to give."""


@dataclass(frozen=True)
class ExportOptions:
    agent_image: str = DEFAULT_IMAGE
    orchestrator_image: str = DEFAULT_ORCHESTRATOR_IMAGE
    storage_class: str | None = None
    orchestrator_storage: str = "1Gi"
    namespace: str | None = None
    extension_image: str | None = None
    """The agent image extended with the fleet's MCP packages (`flotilla image status` names it),
    pushed where the cluster pulls from: run by the agents whose servers need those packages."""


def pull_policy(image: str) -> str:
    """`Always` for a moving tag (`latest`, or none), so that a node never runs a stale copy;
    `IfNotPresent` for a pinned tag or a digest."""
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return "IfNotPresent"
    _, _, tag = name.partition(":")
    return "Always" if tag in ("", "latest") else "IfNotPresent"


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


def _orchestrator_tokens(fleet: LoadedFleet, namespace: str, tokens: dict[str, str]) -> Manifest:
    """Every agent's token, for the orchestrator to accept them (one file per agent)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(f"{ORCHESTRATOR_NAME}-agent-tokens", namespace, _labels(fleet, "orchestrator")),
        "type": "Opaque",
        "stringData": dict(sorted(tokens.items())),
    }


def _fleet_config_map(fleet: LoadedFleet, namespace: str) -> Manifest:
    data = {"fleet.yaml": fleet.path.read_text(encoding="utf-8")}
    for agent, text in sorted(fleet.interfaces.items()):
        data[f"interface-{agent}.md"] = text
    if fleet.project_md is not None:
        data["PROJECT.md"] = fleet.project_md
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(f"{ORCHESTRATOR_NAME}-fleet", namespace, _labels(fleet, "orchestrator")),
        "data": data,
    }


def _orchestrator_container(options: ExportOptions) -> dict[str, Any]:
    return {
        "name": "orchestrator",
        "image": options.orchestrator_image,
        "imagePullPolicy": pull_policy(options.orchestrator_image),
        "args": [
            "up",
            "--runtime",
            "kubernetes",
            "--file",
            "/etc/flotilla/fleet/fleet.yaml",
            "--state-dir",
            ORCHESTRATOR_STATE,
            "--listen",
            f"0.0.0.0:{AGENT_PORT}",
        ],
        "ports": [{"name": "agents", "containerPort": AGENT_PORT, "protocol": "TCP"}],
        "env": [
            {"name": "FLOTILLA_AGENT_TOKENS_DIR", "value": "/etc/flotilla/agent-tokens"},
        ],
        # The model providers' keys (fleet.yaml `api_key_env`), from a Secret the operator makes:
        # kubectl create secret generic flotilla-provider-keys --from-literal=OPENAI_API_KEY=...
        "envFrom": [{"secretRef": {"name": PROVIDER_KEYS_SECRET, "optional": True}}],
        "securityContext": _container_security(),
        "resources": {
            "requests": {"memory": "256Mi", "cpu": "250m"},
            "limits": {"memory": "1Gi", "cpu": "1"},
        },
        "readinessProbe": {"tcpSocket": {"port": AGENT_PORT}, "periodSeconds": 5},
        "volumeMounts": [
            {"name": "state", "mountPath": ORCHESTRATOR_STATE},
            {"name": "fleet", "mountPath": "/etc/flotilla/fleet", "readOnly": True},
            {"name": "agent-tokens", "mountPath": "/etc/flotilla/agent-tokens", "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def _orchestrator(fleet: LoadedFleet, namespace: str, options: ExportOptions) -> list[Manifest]:
    labels = _labels(fleet, "orchestrator")
    selector = {LABEL_FLEET: fleet.name, LABEL_COMPONENT: "orchestrator"}
    pod_spec = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": _pod_security(),
        "containers": [_orchestrator_container(options)],
        "volumes": [
            {"name": "fleet", "configMap": {"name": f"{ORCHESTRATOR_NAME}-fleet"}},
            {
                "name": "agent-tokens",
                "secret": {"secretName": f"{ORCHESTRATOR_NAME}-agent-tokens", "defaultMode": 0o440},
            },
            _tmp_volume(),
        ],
    }
    stateful_set = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(ORCHESTRATOR_NAME, namespace, labels),
        "spec": {
            "replicas": 1,
            "serviceName": ORCHESTRATOR_NAME,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            "volumeClaimTemplates": [_claim("state", options.orchestrator_storage, options.storage_class)],
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(ORCHESTRATOR_NAME, namespace, labels),
        "spec": {
            "type": "ClusterIP",
            "selector": selector,
            "ports": [{"name": "agents", "port": AGENT_PORT, "targetPort": "agents", "protocol": "TCP"}],
        },
    }
    return [_fleet_config_map(fleet, namespace), stateful_set, service]


def _agent_container(
    fleet: LoadedFleet, namespace: str, agent: str, options: ExportOptions
) -> dict[str, Any]:
    resources = fleet.config.resources_of(agent)
    url = f"http://{ORCHESTRATOR_NAME}.{namespace}.svc:{AGENT_PORT}"
    return {
        "name": "agent",
        "image": agent_image_of(fleet, agent, options),
        "imagePullPolicy": pull_policy(agent_image_of(fleet, agent, options)),
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
        "volumeMounts": [
            {"name": "data", "mountPath": DATA_PATH},
            {"name": "token", "mountPath": TOKEN_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def _agent(fleet: LoadedFleet, namespace: str, agent: str, options: ExportOptions) -> Manifest:
    name = agent_object_name(agent)
    labels = _labels(fleet, "agent", agent)
    selector = {LABEL_FLEET: fleet.name, LABEL_AGENT: agent}
    disk = quantity(fleet.config.resources_of(agent).disk_bytes)
    pod_spec = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": _pod_security(),
        "containers": [_agent_container(fleet, namespace, agent, options)],
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


def _network_policies(fleet: LoadedFleet, namespace: str) -> list[Manifest]:
    agents = {"matchLabels": {LABEL_FLEET: fleet.name, LABEL_COMPONENT: "agent"}}
    orchestrator = {"matchLabels": {LABEL_FLEET: fleet.name, LABEL_COMPONENT: "orchestrator"}}
    labels = _labels(fleet, "network-policy")
    agent_port = [{"protocol": "TCP", "port": AGENT_PORT}]
    # Whatever serves DNS in kube-system (CoreDNS, kube-dns, NodeLocal DNSCache's pods, whatever
    # their labels), on port 53 only.
    dns = {
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }
    providers = {
        "to": [
            {"ipBlock": {"cidr": "0.0.0.0/0", "except": METADATA_BLOCKS_V4}},
            {"ipBlock": {"cidr": "::/0", "except": METADATA_BLOCKS_V6}},
        ]
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
                "egress": [{"to": [{"podSelector": orchestrator}], "ports": agent_port}, dns],
            },
        ),
        policy(
            "orchestrator-accepts-agents",
            {
                "podSelector": orchestrator,
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"podSelector": agents}], "ports": agent_port}],
            },
        ),
        policy(
            # The gateway calls model providers on the operator's behalf (agents never do), but
            # not the cloud's metadata service, which hands out the node's credentials.
            "orchestrator-reaches-providers",
            {"podSelector": orchestrator, "policyTypes": ["Egress"], "egress": [providers, dns]},
        ),
    ]


def render(fleet: LoadedFleet, options: ExportOptions, tokens: dict[str, str] | None = None) -> ManifestSet:
    """Every object of the fleet, grouped by the file it goes in."""
    namespace = namespace_of(fleet, options)
    agents = list(fleet.config.agents)
    tokens = tokens or {agent: secrets.token_urlsafe(32) for agent in agents}
    files: dict[str, list[Manifest]] = {
        "00-namespace.yaml": [_namespace(fleet, namespace)],
        "10-network-policies.yaml": _network_policies(fleet, namespace),
        "20-orchestrator.yaml": _orchestrator(fleet, namespace, options),
    }
    for agent in agents:
        files[f"30-{agent_object_name(agent)}.yaml"] = [_agent(fleet, namespace, agent, options)]
    secrets_file = "05-secrets.yaml"
    files[secrets_file] = [
        _orchestrator_tokens(fleet, namespace, tokens),
        *(_token_secret(fleet, namespace, agent, tokens[agent]) for agent in agents),
    ]
    return ManifestSet(files=dict(sorted(files.items())), secret_files=frozenset({secrets_file}))


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

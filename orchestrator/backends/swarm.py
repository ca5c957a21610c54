"""Agents as Docker Swarm services: the fleet on as many machines as the swarm has.

Each agent is a service of one replica with the docker runtime's hardening (uid 10001,
read-only root filesystem, every capability dropped, memory/CPU/pid limits, a small /tmp, no
published port). Its storage is a named volume on the node it is placed on; its token is a
Docker secret, mounted read-only and never written into its storage.

Networks: every agent is alone on an internal overlay network of its own, from which no host
and no other agent is reachable. A relay service (`agent_runtime.relay`, one small process per
agent) is the only other member of that network, under the name `flotilla-orchestrator`, and
carries the agent's connections over the fleet's uplink network to the one address the
orchestrator listens on for agents: the swarm gateway bridge of the manager node it runs on.
A relay per agent, rather than one for the fleet, keeps agents apart and lets an agent be added
or removed without touching the others' paths.

Swarm restarts a failed task by itself (restart policy `any`); the supervisor's restarts are
scale-ups that Swarm already did. Stopping an agent or putting it to sleep scales its service to zero.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import logging
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import docker
import docker.errors
from docker.types import (
    ContainerSpec,
    DriverConfig,
    EndpointSpec,
    Healthcheck,
    Mount,
    NetworkAttachmentConfig,
    Placement,
    Resources,
    RestartPolicy,
    SecretReference,
    ServiceMode,
    TaskTemplate,
)

from orchestrator.backends.base import (
    LABEL_AGENT,
    LABEL_CONFIG_HASH,
    LABEL_FLEET,
    LABEL_MANAGED,
    AgentSpec,
    Backend,
    BackendError,
    BackendUnavailable,
    Health,
    NameConflict,
    StoragePlace,
    UnitInfo,
    UnitState,
)
from orchestrator.backends.docker import connect_docker
from orchestrator.backends.docker_errors import engine_call, gone
from orchestrator.backends.docker_sandbox import DockerSandbox
from orchestrator.backends.swarm_move import fresh_volume_name, mounted_volume, remove_volume, wait_until

log = logging.getLogger(__name__)

LABEL_COMPONENT = "io.flotilla.component"
LABEL_RELAY_TARGET = "io.flotilla.relay-target"
AGENT_UID = "10001"
CONTAINER_DATA = "/data"
TOKEN_SECRET_FILE = "flotilla-token"
TOKEN_PATH = f"/run/secrets/{TOKEN_SECRET_FILE}"
ORCHESTRATOR_ALIAS = "flotilla-orchestrator"
GATEWAY_BRIDGE = "docker_gwbridge"
RELAY_MEMORY_BYTES = 48 * 1024 * 1024
RELAY_NANO_CPUS = 200_000_000
TMP_BYTES = 16 * 1024 * 1024
REMOVE_WAIT_S = 30.0
REAP_WAIT_S = 15.0
STOP_GRACE_NS = 10_000_000_000
STOP_MARGIN_S = 20.0
_ENDED_TASK_STATES = frozenset({"complete", "shutdown", "failed", "rejected", "orphaned", "remove"})

_TASK_STATES: dict[str, UnitState] = {
    "new": "created",
    "allocated": "created",
    "pending": "created",
    "assigned": "created",
    "accepted": "created",
    "preparing": "created",
    "ready": "created",
    "starting": "created",
    "running": "running",
    "complete": "exited",
    "shutdown": "exited",
    "failed": "dead",
    "rejected": "dead",
    "orphaned": "dead",
    "remove": "exited",
}
_HEALTH: dict[str, Health] = {"starting": "starting", "healthy": "healthy", "unhealthy": "unhealthy"}


def service_name(fleet: str, agent: str) -> str:
    return f"flotilla-{fleet}-{agent}"


def relay_name(fleet: str, agent: str) -> str:
    return f"flotilla-{fleet}-{agent}-relay"


def agent_network_name(fleet: str, agent: str) -> str:
    return f"flotilla-{fleet}-{agent}-net"


def uplink_name(fleet: str) -> str:
    return f"flotilla-{fleet}-uplink"


def volume_name(fleet: str, agent: str) -> str:
    return f"flotilla-{fleet}-{agent}-data"


def _labels(fleet: str, component: str, agent: str | None = None) -> dict[str, str]:
    labels = {LABEL_MANAGED: "true", LABEL_FLEET: fleet, LABEL_COMPONENT: component}
    if agent is not None:
        labels[LABEL_AGENT] = agent
    return labels


def _parse_time(value: str | None) -> datetime | None:
    if not value or value.startswith("0001-"):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class SwarmBackend(Backend):
    name = "swarm"
    self_healing = True
    carries_storage = False
    isolation = (
        "strong: one Swarm service per agent on an internal overlay network of its own, "
        "reaching only its relay to the orchestrator"
    )

    def __init__(self, client: docker.DockerClient | None = None) -> None:
        self._client = client or connect_docker()
        self._node_id, self._is_manager = self._swarm_role()
        self._node_names: dict[str, str] = {}
        self._image_for_relay: str | None = None

    # ---------------------------------------------------------------------- fleet-wide

    def _swarm_role(self) -> tuple[str, bool]:
        swarm = self._client.info().get("Swarm") or {}
        if swarm.get("LocalNodeState") != "active":
            raise BackendUnavailable(
                "this Docker engine is not in a swarm: run `docker swarm init` (or join one) first, "
                "or use --runtime docker"
            )
        if not swarm.get("ControlAvailable"):
            raise BackendUnavailable("this node is a swarm worker: run Flotilla on a manager node")
        return str(swarm.get("NodeID", "")), True

    @engine_call("making the fleet's overlay network")
    def prepare_fleet(self, fleet: str) -> str:
        """The uplink network; the address to listen on is this node's swarm gateway bridge."""
        self._ensure_network(uplink_name(fleet), _labels(fleet, "uplink"), internal=False)
        try:
            bridge = self._client.networks.get(GATEWAY_BRIDGE)
        except docker.errors.NotFound:
            raise BackendError(f"no {GATEWAY_BRIDGE} network: is this node's swarm set up?") from None
        configs = (bridge.attrs.get("IPAM") or {}).get("Config") or []
        gateway = next((c.get("Gateway") for c in configs if c.get("Gateway")), None)
        if not gateway:
            raise BackendError(f"{GATEWAY_BRIDGE} has no gateway address")
        return str(gateway)

    def dial_url(self, fleet: str, bind_url: str) -> str:
        port = urlsplit(bind_url).port
        return f"http://{ORCHESTRATOR_ALIAS}:{port}"

    @engine_call("removing the fleet's services, networks and secrets")
    def teardown_fleet(self, fleet: str) -> None:
        for service in self._client.services.list(filters={"label": [f"{LABEL_FLEET}={fleet}"]}):
            if (service.attrs["Spec"].get("Labels") or {}).get(LABEL_MANAGED) == "true":
                service.remove()
        self._wait_tasks_gone(fleet)
        for network in self._client.networks.list(filters={"label": [f"{LABEL_FLEET}={fleet}"]}):
            if (network.attrs.get("Labels") or {}).get(LABEL_MANAGED) == "true":
                self._remove_network(network)
        for secret in self._client.secrets.list(filters={"label": f"{LABEL_FLEET}={fleet}"}):
            secret.remove()

    def _ensure_network(self, name: str, labels: dict[str, str], internal: bool) -> Any:
        found = [n for n in self._client.networks.list(names=[name]) if n.name == name]
        if found:
            network = found[0]
            if (network.attrs.get("Labels") or {}).get(LABEL_MANAGED) != "true":
                raise NameConflict(f"a network named {name} exists and was not created by Flotilla")
            return network
        try:
            return self._client.networks.create(
                name,
                driver="overlay",
                internal=internal,
                attachable=False,
                labels=labels,
                check_duplicate=True,
            )
        except docker.errors.APIError as exc:
            raise BackendError(f"cannot create the overlay network {name}: {exc.explanation or exc}") from exc

    def _remove_network(self, network: Any) -> None:
        deadline = time.monotonic() + REMOVE_WAIT_S
        while True:
            try:
                network.remove()
                return
            except docker.errors.APIError as exc:
                if gone(exc):
                    return
                # Tasks leave a network a moment after their service is removed.
                if time.monotonic() > deadline:
                    raise BackendError(
                        f"cannot remove network {network.name}: {exc.explanation or exc}"
                    ) from exc
                time.sleep(0.5)

    def _wait_tasks_gone(self, fleet: str) -> None:
        deadline = time.monotonic() + REMOVE_WAIT_S
        while time.monotonic() < deadline:
            # Sparse: no inspect per container, which fails for a task container that goes
            # between the listing and its inspection.
            containers = self._client.containers.list(
                all=True, sparse=True, filters={"label": [f"{LABEL_FLEET}={fleet}"]}
            )
            if not containers:
                return
            time.sleep(0.5)

    @engine_call("removing the fleet's volumes")
    def release_storage(self, fleet: str, state_root: Path, delete: bool) -> builtins.list[str]:
        """With `delete`, the agents' volumes on this node go. Volumes on other nodes are named in
        the result: the engine removes volumes only on the node that holds them."""
        if not delete:
            return []
        done = []
        self._wait_tasks_gone(fleet)
        for volume in self._client.volumes.list(filters={"label": f"{LABEL_FLEET}={fleet}"}):
            if (volume.attrs.get("Labels") or {}).get(LABEL_MANAGED) == "true":
                volume.remove(force=True)
                done.append(f"removed volume {volume.name}")
        others = [n for n in self._client.nodes.list() if n.id != self._node_id]
        if others:
            done.append(
                f"volumes of this fleet on {len(others)} other node(s) stay: remove them there with "
                f"`docker volume prune --filter label={LABEL_FLEET}={fleet}`"
            )
        return done

    def storage_notes(self) -> dict[str, str]:
        """Swarm volumes are plain local volumes: no quota (see docs/swarm.md)."""
        return {
            str((s.attrs["Spec"].get("Labels") or {}).get(LABEL_AGENT)): "swarm volumes have no quota"
            for s in self._client.services.list(filters={"label": [f"{LABEL_COMPONENT}=agent"]})
        }

    # ---------------------------------------------------------------------- one agent

    def _token_secret(self, spec: AgentSpec) -> Any:
        if spec.token_file is None:
            raise BackendError(f"no token file for agent {spec.agent}")
        token = spec.token_file.read_bytes()
        digest = hashlib.sha256(token).hexdigest()[:12]
        name = f"flotilla-{spec.fleet}-{spec.agent}-token-{digest}"
        for secret in self._client.secrets.list(filters={"name": name}):
            if secret.name == name:
                return secret
        return self._client.secrets.create(
            name=name, data=token, labels=_labels(spec.fleet, "token", spec.agent)
        )

    def _relay(self, spec: AgentSpec, network: Any, bind_host: str, bind_port: int) -> None:
        """The agent's relay, listening on its network as `flotilla-orchestrator`."""
        name = relay_name(spec.fleet, spec.agent)
        target = f"{bind_host}:{bind_port}"
        for service in self._client.services.list(filters={"name": name}):
            if service.name != name:
                continue
            if (service.attrs["Spec"].get("Labels") or {}).get(LABEL_RELAY_TARGET) == target:
                return
            service.remove()
        labels = _labels(spec.fleet, "relay", spec.agent) | {LABEL_RELAY_TARGET: target}
        self._client.services.create(
            self._held_image(spec.image),
            name=name,
            command=["python3", "-m", "agent_runtime.relay", str(bind_port), bind_host, str(bind_port)],
            labels=labels,
            container_labels=labels,
            networks=[
                NetworkAttachmentConfig(network.id, aliases=[ORCHESTRATOR_ALIAS]),
                NetworkAttachmentConfig(uplink_name(spec.fleet)),
            ],
            endpoint_spec=EndpointSpec(mode="dnsrr"),
            # The relay forwards to this manager's gateway bridge, so it runs here.
            constraints=[f"node.id=={self._node_id}"],
            user=f"{AGENT_UID}:{AGENT_UID}",
            read_only=True,
            cap_drop=["ALL"],
            healthcheck=Healthcheck(test=["NONE"]),
            resources=Resources(cpu_limit=RELAY_NANO_CPUS, mem_limit=RELAY_MEMORY_BYTES),
            restart_policy=RestartPolicy(condition="any", delay=1_000_000_000),
            mode=ServiceMode("replicated", replicas=1),
        )

    def _held_image(self, image: str) -> str:
        """The reference a task starts from without asking a registry. A swarm node tries to pull
        a service's image named by tag at every task start, even when it holds it, and waits for
        the registry's answer (or its DNS failure) first; a digest it holds, or an image ID, it
        never pulls. An image only this engine has is named by its ID on a one-node swarm; with
        more nodes by its tag, since a node may have built a copy of its own (another ID)."""
        try:
            held = self._client.images.get(image)
        except docker.errors.ImageNotFound:
            return image  # only a registry has it: every node pulls it from there
        digests = held.attrs.get("RepoDigests") or []
        if digests:
            return str(digests[0])
        return str(held.id) if len(self._client.nodes.list()) == 1 else image

    def _agent_task(self, spec: AgentSpec, network: Any, secret: Any) -> TaskTemplate:
        env = {
            "FLOTILLA_URL": spec.orchestrator_url,
            "FLOTILLA_AGENT": spec.agent,
            "FLOTILLA_DATA": CONTAINER_DATA,
            "FLOTILLA_BEARER_FILE": TOKEN_PATH,
        } | dict(spec.env)
        container = ContainerSpec(
            self._held_image(spec.image),
            env=[f"{k}={v}" for k, v in env.items()],
            user=f"{AGENT_UID}:{AGENT_UID}",
            labels=spec.labels | {LABEL_COMPONENT: "agent"},
            read_only=True,
            cap_drop=["ALL"],
            mounts=[
                Mount(
                    CONTAINER_DATA,
                    spec.storage_name or volume_name(spec.fleet, spec.agent),
                    type="volume",
                    labels=_labels(spec.fleet, "data", spec.agent),
                    driver_config=DriverConfig("local"),
                ),
                Mount("/tmp", None, type="tmpfs", tmpfs_size=TMP_BYTES),
            ],
            secrets=[
                SecretReference(
                    secret.id,
                    secret.name,
                    filename=TOKEN_SECRET_FILE,
                    uid=AGENT_UID,
                    gid=AGENT_UID,
                    mode=0o400,
                )
            ],
            stop_grace_period=STOP_GRACE_NS,
        )
        task = TaskTemplate(
            container,
            resources=Resources(cpu_limit=int(spec.cpus * 1e9), mem_limit=spec.memory_bytes),
            restart_policy=RestartPolicy(condition="any", delay=2_000_000_000),
            placement=Placement(constraints=list(spec.placement)) if spec.placement else None,
            networks=[NetworkAttachmentConfig(network.id)],
        )
        # The SDK has no field for a pid limit; the engine API (1.41) has it.
        task["Resources"]["Limits"]["Pids"] = spec.pids
        return task

    def _create(self, spec: AgentSpec, replicas: int) -> UnitInfo:
        existing = self._service(spec.unit_name)
        if existing is not None:
            labels = existing.attrs["Spec"].get("Labels") or {}
            if labels.get(LABEL_MANAGED) != "true" or labels.get(LABEL_AGENT) != spec.agent:
                raise NameConflict(f"a service named {spec.unit_name} exists and was not created by Flotilla")
            self._remove_settled(existing)
        url = urlsplit(spec.orchestrator_url)
        bind_host = self.prepare_fleet(spec.fleet)
        network = self._ensure_network(
            agent_network_name(spec.fleet, spec.agent),
            _labels(spec.fleet, "network", spec.agent),
            internal=True,
        )
        self._relay(spec, network, bind_host, url.port or 80)
        secret = self._token_secret(spec)
        try:
            created = self._client.api.create_service(
                self._agent_task(spec, network, secret),
                name=spec.unit_name,
                labels=spec.labels | {LABEL_COMPONENT: "agent"},
                mode=ServiceMode("replicated", replicas=replicas),
                endpoint_spec=EndpointSpec(mode="dnsrr"),
            )
        except docker.errors.APIError as exc:
            raise BackendError(
                f"cannot create the service of {spec.agent}: {exc.explanation or exc}"
            ) from exc
        return self.inspect(created["ID"])

    def create(self, spec: AgentSpec) -> UnitInfo:
        return self._create(spec, replicas=0)

    def run(self, spec: AgentSpec) -> UnitInfo:
        return self._create(spec, replicas=1)

    def _service(self, name_or_id: str) -> Any | None:
        try:
            return self._client.services.get(name_or_id)
        except docker.errors.NotFound:
            return None

    def _require(self, unit_id: str) -> Any:
        service = self._service(unit_id)
        if service is None:
            raise BackendError(f"no service {unit_id}")
        return service

    def start(self, unit_id: str) -> None:
        self._scale(unit_id, 1)

    def stop(self, unit_id: str, timeout_s: float = 10.0) -> None:
        """Scale to zero and wait until the task has ended, as `docker stop` does: a start right
        after (a restart) would otherwise run a second task on the volume beside the first."""
        self._scale(unit_id, 0)
        wait_until(
            lambda: not self._live_tasks(unit_id),
            f"the task of {unit_id} to stop",
            within_s=timeout_s + STOP_GRACE_NS / 1e9 + STOP_MARGIN_S,
        )

    def _live_tasks(self, unit_id: str) -> builtins.list[dict[str, Any]]:
        """Tasks of the service that have not ended, on any node."""
        service = self._service(unit_id)
        if service is None:
            return []
        return [t for t in service.tasks() if (t.get("Status") or {}).get("State") not in _ENDED_TASK_STATES]

    def _remove_settled(self, service: Any) -> None:
        """Remove the service once no task of it is still being reaped. Docker 20.10's swarm
        manager dereferences a task the reaper deleted meanwhile when a service is removed while
        its scaled-down tasks are reaped (`SetServiceTasksRemove`: nil pointer, the daemon
        panics), which a stop followed at once by a removal, as a move does, can hit."""
        with contextlib.suppress(BackendError):
            wait_until(
                lambda: not [t for t in service.tasks() if t.get("DesiredState") == "remove"],
                f"the removed tasks of {service.name} to be reaped",
                within_s=REAP_WAIT_S,
            )
        service.remove()

    def _scale(self, unit_id: str, replicas: int) -> None:
        service = self._require(unit_id)
        current = ((service.attrs["Spec"].get("Mode") or {}).get("Replicated") or {}).get("Replicas")
        if current != replicas:
            service.scale(replicas)

    @engine_call("removing an agent's service")
    def remove(self, unit_id: str) -> None:
        service = self._service(unit_id)
        if service is None:
            return
        labels = service.attrs["Spec"].get("Labels") or {}
        fleet, agent = labels.get(LABEL_FLEET, ""), labels.get(LABEL_AGENT, "")
        self._remove_settled(service)
        relay = self._service(relay_name(fleet, agent))
        if relay is not None:
            relay.remove()
        for network in self._client.networks.list(names=[agent_network_name(fleet, agent)]):
            if (network.attrs.get("Labels") or {}).get(LABEL_AGENT) == agent:
                self._remove_network(network)
        for secret in self._client.secrets.list(filters={"label": f"{LABEL_AGENT}={agent}"}):
            if (secret.attrs["Spec"].get("Labels") or {}).get(LABEL_FLEET) == fleet:
                secret.remove()

    # ---------------------------------------------------------------------- moving

    def _ready_nodes(self) -> builtins.list[str]:
        """Host names of the nodes a task can be placed on (ready and active)."""
        return sorted(
            str(n.attrs["Description"]["Hostname"])
            for n in self._client.nodes.list()
            if (n.attrs.get("Status") or {}).get("State") == "ready"
            and (n.attrs.get("Spec") or {}).get("Availability") == "active"
        )

    def check_move(self, unit_name: str, node: str) -> None:
        ready = self._ready_nodes()
        if node not in ready:
            raise BackendError(f"no ready swarm node named {node!r} (ready: {', '.join(ready) or 'none'})")

    def storage_of(self, unit_name: str) -> StoragePlace:
        """The volume the agent's service mounts and the node of its newest task."""
        service = self._require(unit_name)
        labels = service.attrs["Spec"].get("Labels") or {}
        name = mounted_volume(service, CONTAINER_DATA) or volume_name(
            labels.get(LABEL_FLEET, ""), labels.get(LABEL_AGENT, "")
        )
        task, _ = self._latest_task(service)
        return StoragePlace(name=name, node=self._node_name((task or {}).get("NodeID")))

    def fresh_storage_name(self, fleet: str, agent: str) -> str:
        return fresh_volume_name(volume_name(fleet, agent))

    def remove_storage(self, place: StoragePlace) -> str:
        return remove_volume(self._client, place, self._node_name(self._node_id))

    # ---------------------------------------------------------------------- looking

    def _node_name(self, node_id: str | None) -> str | None:
        if not node_id:
            return None
        if node_id not in self._node_names:
            try:
                node = self._client.nodes.get(node_id)
                self._node_names[node_id] = node.attrs["Description"]["Hostname"]
            except docker.errors.NotFound:
                return node_id[:12]
        return self._node_names[node_id]

    def _latest_task(
        self, service: Any, tasks: builtins.list[dict[str, Any]] | None = None
    ) -> tuple[dict[str, Any] | None, int]:
        """The service's newest task and how many came before it; `tasks`, when given, are the
        service's tasks already fetched."""
        tasks = list(service.tasks()) if tasks is None else tasks
        if not tasks:
            return None, 0
        tasks.sort(key=lambda t: t.get("CreatedAt", ""))
        return tasks[-1], max(len(tasks) - 1, 0)

    def inspect(self, unit_id: str) -> UnitInfo:
        service = self._require(unit_id)
        return self._info(service)

    def engine_says(self, unit: UnitInfo) -> str:
        service = self._service(unit.id)
        if service is None:
            return "no service"
        task, restarts = self._latest_task(service)
        if task is None:
            return "service without a task yet"
        status = task.get("Status") or {}
        said = [f"task {status.get('State', 'unknown')}"]
        if status.get("Err"):
            said.append(str(status["Err"]))
        elif status.get("Message"):
            said.append(str(status["Message"]))
        if restarts:
            said.append(f"{restarts} earlier task{'s' if restarts != 1 else ''}")
        return ", ".join(said)

    def _info(self, service: Any, tasks: builtins.list[dict[str, Any]] | None = None) -> UnitInfo:
        spec = service.attrs["Spec"]
        labels = spec.get("Labels") or {}
        replicas = ((spec.get("Mode") or {}).get("Replicated") or {}).get("Replicas", 0)
        task, restarts = self._latest_task(service, tasks)
        state: UnitState = "exited"
        started_at = None
        exit_code = None
        node = None
        health: Health = "none"
        if task is not None:
            status = task.get("Status") or {}
            node = self._node_name(task.get("NodeID"))
            state = _TASK_STATES.get(str(status.get("State")), "created")
            if state == "running":
                started_at = _parse_time(status.get("Timestamp"))
                health = self._local_health(status)
            exit_code = (status.get("ContainerStatus") or {}).get("ExitCode")
        if replicas == 0:
            state = "exited"
        return UnitInfo(
            id=service.id,
            name=service.name,
            agent=labels.get(LABEL_AGENT, ""),
            fleet=labels.get(LABEL_FLEET, ""),
            config_hash=labels.get(LABEL_CONFIG_HASH, ""),
            state=state,
            health=health,
            started_at=started_at,
            exit_code=exit_code,
            restart_count=restarts,
            labels=labels,
            node=node,
        )

    def _local_container(self, status: dict[str, Any]) -> Any | None:
        container_id = (status.get("ContainerStatus") or {}).get("ContainerID")
        if not container_id:
            return None
        try:
            return self._client.containers.get(container_id)
        except docker.errors.NotFound:
            return None  # on another node

    def _local_health(self, status: dict[str, Any]) -> Health:
        container = self._local_container(status)
        if container is None:
            return "none"
        health = ((container.attrs.get("State") or {}).get("Health") or {}).get("Status", "")
        return _HEALTH.get(str(health), "none")

    def logs(self, unit_id: str, follow: bool = False, tail: int = 200) -> Iterator[str]:
        service = self._require(unit_id)
        for chunk in service.logs(stdout=True, stderr=True, follow=follow, tail=tail):
            yield chunk.decode("utf-8", errors="replace").rstrip("\n")

    @engine_call("listing the agents' services")
    def list(self, labels: dict[str, str]) -> list[UnitInfo]:
        wanted = [f"{k}={v}" for k, v in labels.items()] + [f"{LABEL_COMPONENT}=agent"]
        services = self._client.services.list(filters={"label": wanted})
        if not services:
            return []
        # The tasks of every listed service in one call, not one call per service: the
        # supervisor lists the fleet every few seconds.
        tasks: dict[str, builtins.list[dict[str, Any]]] = {s.id: [] for s in services}
        for task in self._client.api.tasks(filters={"service": [s.id for s in services]}):
            tasks.setdefault(task.get("ServiceID", ""), []).append(task)
        return [self._info(service, tasks[service.id]) for service in services]

    def sandbox(self) -> DockerSandbox:
        """Commands run in containers on this node's engine (the manager's), wherever the agent runs."""
        return DockerSandbox(self._client)

    def exec(self, unit_id: str, command: builtins.list[str]) -> tuple[int, str]:
        """Inside the agent's task container, when it runs on this node."""
        task, _ = self._latest_task(self._require(unit_id))
        container = self._local_container((task or {}).get("Status") or {})
        if container is None:
            raise BackendError("the agent's task is not running on this node: run `docker exec` on its node")
        code, output = container.exec_run(command, user=f"{AGENT_UID}:{AGENT_UID}", workdir=CONTAINER_DATA)
        return int(code), output.decode("utf-8", errors="replace")

    def memory_usage(self, unit_id: str) -> int | None:
        service = self._service(unit_id)
        if service is None:
            return None
        task, _ = self._latest_task(service)
        container = self._local_container((task or {}).get("Status") or {})
        if container is None:
            return None
        stats = container.stats(stream=False)
        usage = (stats.get("memory_stats") or {}).get("usage")
        return int(usage) if usage is not None else None

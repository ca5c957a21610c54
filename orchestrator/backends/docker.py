"""Agents as hardened Docker containers: the main runtime backend.

Each agent runs as uid 10001 with a read-only root filesystem, every capability dropped,
no-new-privileges, memory/CPU/pid limits, a small /tmp tmpfs and its own named volume at
/data (with a disk quota, see `docker_storage`). Its only network is the fleet's `internal`
bridge with inter-container traffic disabled: it reaches the orchestrator on the bridge's
gateway address and nothing else. No port is published and no secret travels in the
environment: the agent's token is an orchestrator-owned file mounted read-only, alone, at
/run/flotilla/token. No host folder is shared with a container.
"""

from __future__ import annotations

import builtins
import math
import os
import re
import socket
import time
from collections.abc import Collection, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.types import LogConfig, Mount

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
    SnapshotRun,
    StoppedStorage,
    UnitInfo,
    UnitState,
)
from orchestrator.backends.docker_errors import engine_call
from orchestrator.backends.docker_listing import InspectCache
from orchestrator.backends.docker_sandbox import DockerSandbox, remove_sandboxes
from orchestrator.backends.docker_snapshot import DockerSnapshotRun
from orchestrator.backends.docker_storage import TOKEN_TARGET, AgentVolumes
from orchestrator.backends.firewall import FirewallError, install_fence, remove_fence
from orchestrator.config.capacity import Capacity, docker_capacity

AGENT_UID = 10001
AGENT_GID = 10001
CONTAINER_DATA = "/data"
NETWORK_PREFIX = "flotilla-"
NAME_PREFIX = "flotilla-"
"""Of every agent's unit name (`AgentSpec.unit_name`)."""
NAME_FILTER_MOST = 200
"""Past this many names, the engine matching each container against each name costs more than
sending the whole fleet."""
ICC_OPTION = "com.docker.network.bridge.enable_icc"
DOCKER_API_VERSION = "1.41"  # Docker Engine 20.10 and later (services with capability and pid limits)
BRIDGE_NAME_OPTION = "com.docker.network.bridge.name"
UNAVAILABLE_HINT = "use --runtime process to run agents as local processes instead"
# Each check is an exec into the container (about 30 ms of CPU there, more in the engine): every
# 5 s that was most of an idle fleet's CPU. Supervision does not wait for it: an agent that stops
# checking in is restarted on its own (the alive file the check reads is touched on each check-in).
NETWORK_RELEASE_WAIT_S = 30.0
HEALTH_INTERVAL_S = 30.0
HEALTH_TIMEOUT_S = 3.0
HEALTH_START_PERIOD_S = 2.0
HEALTH_RETRIES = 3
# Names that suggest a credential; such variables never enter an agent's environment.
SECRET_ENV_NAME = re.compile(r"(^|_)(API_?KEY|KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|AUTH)(_|$)", re.I)

_STATES: dict[str, UnitState] = {
    "created": "created",
    "running": "running",
    "paused": "running",
    "restarting": "running",
    "removing": "exited",
    "exited": "exited",
    "dead": "dead",
}
_HEALTH: dict[str, Health] = {"starting": "starting", "healthy": "healthy", "unhealthy": "unhealthy"}


def connect_docker(timeout_s: int = 60) -> docker.DockerClient:
    """A client for the local daemon, or BackendUnavailable in one line with a hint."""
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    if where.startswith("unix://"):
        _probe_unix_socket(where.removeprefix("unix://"))
    client = None
    try:
        # A fixed API version: with "auto" the SDK asks the daemon for its version inside its own
        # constructor, a connection it leaks when it fails.
        client = docker.from_env(version=DOCKER_API_VERSION, timeout=timeout_s)
        if where.startswith("unix://"):
            # No proxy stands between a process and a local socket; left on, requests reads the
            # whole environment for proxy settings on every call (thousands while a fleet starts).
            client.api.trust_env = False
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:
        if client is not None:
            client.close()
        reason = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        raise BackendUnavailable(
            f"no Docker daemon answers at {where} ({reason}); {UNAVAILABLE_HINT}"
        ) from exc
    return client


def _probe_unix_socket(path: str) -> None:
    """Connect once ourselves: the SDK leaks its socket when that first connection fails."""
    if not Path(path).exists():
        raise BackendUnavailable(f"no Docker daemon: {path} does not exist; {UNAVAILABLE_HINT}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(5.0)
        try:
            probe.connect(path)
        except PermissionError:
            raise BackendUnavailable(
                f"no permission to use the Docker daemon at {path}: run as root or join the docker "
                f"group; {UNAVAILABLE_HINT}"
            ) from None
        except OSError as exc:
            raise BackendUnavailable(
                f"no Docker daemon answers at {path} ({exc.strerror or exc}); {UNAVAILABLE_HINT}"
            ) from None


def network_name(fleet: str) -> str:
    return f"{NETWORK_PREFIX}{fleet}"


def _is_ours(labels: dict[str, str] | None) -> bool:
    return (labels or {}).get(LABEL_MANAGED) == "true"


def _parse_time(value: str | None) -> datetime | None:
    if not value or value.startswith("0001-"):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def unit_info(attrs: dict[str, Any], node: str | None = None) -> UnitInfo:
    """A UnitInfo from `docker inspect` data; `node` is the host name of the engine that runs it."""
    labels: dict[str, str] = attrs.get("Config", {}).get("Labels") or {}
    state = attrs.get("State", {})
    status = _STATES.get(state.get("Status", ""), "dead")
    return UnitInfo(
        id=attrs["Id"],
        name=attrs.get("Name", "").lstrip("/"),
        agent=labels.get(LABEL_AGENT, ""),
        fleet=labels.get(LABEL_FLEET, ""),
        config_hash=labels.get(LABEL_CONFIG_HASH, ""),
        state=status,
        health=_HEALTH.get((state.get("Health") or {}).get("Status", ""), "none"),
        started_at=_parse_time(state.get("StartedAt")),
        exit_code=state.get("ExitCode") if status in ("exited", "dead") else None,
        restart_count=int(attrs.get("RestartCount", 0)),
        labels=labels,
        node=node,
    )


def memory_without_cache(stats: dict[str, Any]) -> int | None:
    """Memory in use minus reclaimable page cache, computed as `docker stats` shows it."""
    memory = stats.get("memory_stats") or {}
    usage = memory.get("usage")
    if usage is None:
        return None
    detail = memory.get("stats") or {}
    # cgroup v1 reports total_inactive_file, v2 inactive_file; older daemons only "cache".
    for key in ("total_inactive_file", "inactive_file", "cache"):
        if key in detail and detail[key] < usage:
            return int(usage - detail[key])
    return int(usage)


class _NameTaken(Exception):
    """docker create answered 409: a container already has that name."""


class DockerBackend(Backend):
    name = "docker"
    hardening = (
        "strong: one container per agent as uid 10001, read-only root, no capabilities, "
        "no-new-privileges, memory/cpu/pid limits, internal network without agent-to-agent traffic, "
        "storage of its own"
    )

    @property
    def isolation(self) -> str:  # type: ignore[override]
        """The hardening, and which agents run without a disk quota and why."""
        missing = sorted(f"{agent} ({note})" for agent, note in self._volumes.notes.items())
        if not missing:
            return f"{self.hardening}, disk quota per agent"
        return f"{self.hardening}; no disk quota for: {', '.join(missing)}"

    def __init__(
        self, client: docker.DockerClient | None = None, *, command: list[str] | None = None
    ) -> None:
        """command, when given, replaces the image's entrypoint (diagnostics and tests)."""
        self._client = client or connect_docker()
        self._command = command
        self._inspected = InspectCache(self._inspect_attrs)
        self._volumes = AgentVolumes(self._client)
        self._host: str | None = None

    def _engine_host(self) -> str | None:
        """The host name of the machine the Docker engine runs on (where every agent runs)."""
        if self._host is None:
            try:
                self._host = str(self._client.info().get("Name") or "") or None
            except (docker.errors.DockerException, OSError):
                return None
        return self._host

    def capacity(self) -> Capacity | None:
        try:
            info: dict[str, object] = self._client.info()
        except (docker.errors.DockerException, OSError):
            return None
        return docker_capacity(info)

    def set_cpus(self, unit_id: str, cpus: float) -> bool:
        # The SDK's update_container has no NanoCpus, and the engine refuses a quota and period
        # on a container created with NanoCpus: the engine's update endpoint is called directly.
        api = self._client.api
        try:
            answer = api._post_json(
                api._url("/containers/{0}/update", unit_id), data={"NanoCpus": int(cpus * 1e9)}
            )
            api._raise_for_status(answer)
        except docker.errors.APIError as exc:
            raise BackendError(
                f"cannot change the CPU limit of {unit_id[:12]}: {exc.explanation or exc}"
            ) from exc
        except (docker.errors.DockerException, OSError) as exc:
            raise BackendError(f"cannot change the CPU limit of {unit_id[:12]}: {exc}") from exc
        self._inspected.forget(unit_id)
        return True

    # --- fleet network ---------------------------------------------------------------------

    def _find_network(self, name: str) -> Any | None:
        exact = [network for network in self._client.networks.list(names=[name]) if network.name == name]
        ours = [network for network in exact if _is_ours(network.attrs.get("Labels"))]
        return (ours or exact or [None])[0]

    @engine_call("making the fleet's network")
    def prepare_fleet(self, fleet: str) -> str:
        name = network_name(fleet)
        network = self._find_network(name)
        if network is None:
            # docker-py inspects what it creates: these attributes are complete.
            network = self._client.networks.create(
                name,
                driver="bridge",
                internal=True,
                options={ICC_OPTION: "false"},
                labels={LABEL_MANAGED: "true", LABEL_FLEET: fleet},
            )
        else:
            network.reload()  # a listing's attributes lack the IPAM configuration
        attrs = network.attrs
        if not _is_ours(attrs.get("Labels")):
            raise NameConflict(f"a Docker network named {name} exists and was not created by Flotilla")
        if not attrs.get("Internal") or (attrs.get("Options") or {}).get(ICC_OPTION) != "false":
            raise BackendError(
                f"network {name} is not isolated (internal, {ICC_OPTION}=false); "
                f"stop the fleet and remove it: docker network rm {name}"
            )
        gateways = [entry.get("Gateway") for entry in (attrs.get("IPAM") or {}).get("Config") or []]
        gateway = next((address for address in gateways if address and ":" not in address), None)
        if gateway is None:
            raise BackendError(f"network {name} has no IPv4 gateway address")
        return str(gateway)

    def guard_fleet(self, fleet: str, address: str, port: int) -> str | None:
        """Install the fleet's firewall chain (see orchestrator.backends.firewall)."""
        network = self._find_network(network_name(fleet))
        if network is None:
            raise BackendError(f"network {network_name(fleet)} does not exist: prepare the fleet first")
        options = network.attrs.get("Options") or {}
        bridge = options.get(BRIDGE_NAME_OPTION) or f"br-{network.id[:12]}"
        try:
            self.fence_warning = install_fence(fleet, bridge, address, port).warning
        except FirewallError as exc:
            raise BackendError(f"cannot fence the agents of fleet {fleet} in: {exc}") from exc
        return self.fence_warning

    @engine_call("removing the fleet's network and sandboxes")
    def teardown_fleet(self, fleet: str) -> None:
        remove_sandboxes(self._client, fleet)
        try:
            remove_fence(fleet)
        except FirewallError as exc:
            raise BackendError(f"cannot remove the firewall rules of fleet {fleet}: {exc}") from exc
        name = network_name(fleet)
        network = self._find_network(name)
        if network is None or not _is_ours(network.attrs.get("Labels")):
            return
        # The engine lets go of a removed container's endpoint a moment after the removal returns:
        # with many removed at once, the network is briefly still "in use".
        deadline = time.monotonic() + NETWORK_RELEASE_WAIT_S
        while True:
            try:
                network.remove()
            except docker.errors.NotFound:
                return
            except docker.errors.APIError as exc:
                if "active endpoints" in str(exc.explanation or exc) and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                raise BackendError(f"cannot remove network {name}: {exc.explanation or exc}") from exc
            return

    # --- containers ------------------------------------------------------------------------

    def _get(self, unit_id: str) -> Any | None:
        try:
            return self._client.containers.get(unit_id)
        except docker.errors.NotFound:
            return None

    def _get_ours(self, unit_id: str) -> Any | None:
        container = self._get(unit_id)
        if container is not None and not _is_ours(container.labels):
            raise NameConflict(f"container {unit_id} was not created by Flotilla; leaving it alone")
        return container

    def _environment(self, spec: AgentSpec) -> dict[str, str]:
        env = dict(spec.env)
        secret_like = sorted(name for name in env if SECRET_ENV_NAME.search(name))
        if secret_like:
            raise BackendError(
                f"refusing to pass {', '.join(secret_like)} to agent {spec.agent}: secrets never go in a "
                "container's environment"
            )
        return env | {
            "FLOTILLA_URL": spec.orchestrator_url,
            "FLOTILLA_AGENT": spec.agent,
            "FLOTILLA_DATA": CONTAINER_DATA,
            "FLOTILLA_BEARER_FILE": TOKEN_TARGET,
        }

    def _replace_own_stale(self, spec: AgentSpec) -> None:
        existing = self._get(spec.unit_name)
        if existing is None:
            return
        labels = existing.labels or {}
        if (
            not _is_ours(labels)
            or labels.get(LABEL_FLEET) != spec.fleet
            or labels.get(LABEL_AGENT) != spec.agent
        ):
            raise NameConflict(
                f"a container named {spec.unit_name} exists and was not created by Flotilla for agent "
                f"{spec.agent}; rename or remove it (docker rm {spec.unit_name}) and retry"
            )
        existing.remove(force=True)

    def create(self, spec: AgentSpec) -> UnitInfo:
        return unit_info(self._create(spec).attrs, self._engine_host())

    def run(self, spec: AgentSpec) -> UnitInfo:
        """Create and start, starting the fresh container as it is (no second look-up)."""
        container = self._create(spec)
        self._start(container)
        return unit_info(container.attrs, self._engine_host())

    def _create(self, spec: AgentSpec) -> Any:
        """The created container, with its volume (made when missing) at /data."""
        env = self._environment(spec)
        volume = self._volumes.ensure(spec)
        try:
            container = self._create_container(spec, env, volume)
        except _NameTaken:
            # Ours from an earlier run is replaced; anyone else's is left alone (NameConflict).
            self._replace_own_stale(spec)
            try:
                container = self._create_container(spec, env, volume)
            except _NameTaken:
                raise NameConflict(f"a container named {spec.unit_name} appeared meanwhile") from None
        self._inspected.remember(container.attrs)  # docker-py inspects what it creates
        return container

    @staticmethod
    def _token_mounts(spec: AgentSpec) -> list[Mount]:
        """The token file alone, read-only: the container can read it and change nothing."""
        if spec.token_file is None:
            return []
        return [Mount(TOKEN_TARGET, str(spec.token_file.resolve()), type="bind", read_only=True)]

    def _create_container(self, spec: AgentSpec, env: dict[str, str], volume: str) -> Any:
        network = network_name(spec.fleet)
        try:
            return self._client.containers.create(
                spec.image,
                entrypoint=self._command,
                name=spec.unit_name,
                hostname=spec.agent,
                labels=spec.labels,
                environment=env,
                volumes={volume: {"bind": CONTAINER_DATA, "mode": "rw"}},
                mounts=self._token_mounts(spec),
                user=f"{AGENT_UID}:{AGENT_GID}",
                read_only=True,
                tmpfs={"/tmp": "size=16m,mode=1777"},
                cap_drop=["ALL"],
                security_opt=["no-new-privileges:true"],
                mem_limit=spec.memory_bytes,
                memswap_limit=spec.memory_bytes,
                nano_cpus=int(spec.cpus * 1e9),
                pids_limit=spec.pids,
                network=network,
                restart_policy={"Name": "no"},
                healthcheck={
                    "test": ["CMD", "python3", "-m", "agent_runtime.health"],
                    "interval": int(HEALTH_INTERVAL_S * 1e9),
                    "timeout": int(HEALTH_TIMEOUT_S * 1e9),
                    "start_period": int(HEALTH_START_PERIOD_S * 1e9),
                    "retries": HEALTH_RETRIES,
                },
                log_config=LogConfig(type=LogConfig.types.JSON, config={"max-size": "10m", "max-file": "3"}),
            )
        except docker.errors.ImageNotFound as exc:
            raise BackendError(
                f"agent image {spec.image} not found: build it with `flotilla image build`"
            ) from exc
        except docker.errors.NotFound as exc:
            raise BackendError(
                f"network {network} does not exist (removed under the fleet?): "
                "`flotilla down` then `flotilla up` makes it again"
            ) from exc
        except docker.errors.APIError as exc:
            if exc.status_code == 409:
                raise _NameTaken from exc
            raise BackendError(f"cannot create {spec.unit_name}: {exc.explanation or exc}") from exc

    def start(self, unit_id: str) -> None:
        container = self._get_ours(unit_id)
        if container is None:
            raise BackendError(f"no agent container {unit_id}")
        for mount in container.attrs.get("Mounts") or []:
            if mount.get("Destination") == CONTAINER_DATA and mount.get("Type") == "volume":
                self._volumes.reattach(str(mount.get("Name")))
        self._start(container)

    def _start(self, container: Any) -> None:
        self._inspected.forget(container.id)
        try:
            container.start()
        except docker.errors.APIError as exc:
            raise BackendError(f"cannot start {container.name}: {exc.explanation or exc}") from exc

    def stop(self, unit_id: str, timeout_s: float = 10.0) -> None:
        container = self._get_ours(unit_id)
        if container is None:
            return
        self._inspected.forget(container.id)
        try:
            container.stop(timeout=math.ceil(timeout_s))
        except docker.errors.NotFound:
            return

    @engine_call("removing an agent's container")
    def remove(self, unit_id: str) -> None:
        container = self._get_ours(unit_id)
        if container is None:
            return
        self._inspected.forget(container.id)
        try:
            container.remove(force=True)
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as exc:
            raise BackendError(f"cannot remove {container.name}: {exc.explanation or exc}") from exc

    def inspect(self, unit_id: str) -> UnitInfo:
        container = self._get(unit_id)
        if container is None:
            return UnitInfo(id=unit_id, name=unit_id, agent="", fleet="", config_hash="", state="missing")
        return unit_info(container.attrs, self._engine_host())

    def logs(self, unit_id: str, follow: bool = False, tail: int = 200) -> Iterator[str]:
        container = self._get(unit_id)
        if container is None:
            raise BackendError(f"no agent container {unit_id}")
        stream = container.logs(stream=True, follow=follow, tail=tail, stdout=True, stderr=True)
        pending = b""
        try:
            for chunk in stream:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    yield line.decode("utf-8", errors="replace")
        finally:
            # A caller that stops reading a followed log must not leave the socket open; the
            # stream's close() shuts the socket but leaves the HTTP response holding it.
            stream.close()
            response = getattr(stream, "_response", None)
            if response is not None:
                response.close()
        if pending:
            yield pending.decode("utf-8", errors="replace")

    @engine_call("listing the agents' containers")
    def list(self, labels: dict[str, str]) -> list[UnitInfo]:
        wanted = {LABEL_MANAGED: "true"} | labels
        filters = {"label": [f"{key}={value}" for key, value in wanted.items()]}
        summaries = self._client.api.containers(all=True, filters=filters)
        host = self._engine_host()
        return [unit_info(attrs, host) for attrs in self._inspected.resolve(summaries)]

    def list_agents(self, fleet: str, agents: Collection[str]) -> builtins.list[UnitInfo]:
        """By container name, in one call: the engine sends only these agents' containers."""
        if not agents:
            return []
        if len(agents) > NAME_FILTER_MOST:
            return super().list_agents(fleet, agents)
        filters = {
            "label": [f"{LABEL_MANAGED}=true", f"{LABEL_FLEET}={fleet}"],
            # Agent and fleet names are DNS labels: nothing in them is special in a pattern.
            "name": [f"^/?{NAME_PREFIX}{fleet}-{agent}$" for agent in agents],
        }
        summaries = self._client.api.containers(all=True, filters=filters)
        host = self._engine_host()
        found = [unit_info(attrs, host) for attrs in self._inspected.resolve(summaries)]
        return [unit for unit in found if unit.agent in agents]

    def engine_says(self, unit: UnitInfo) -> str:
        attrs = self._inspect_attrs(unit.id)
        if attrs is None:
            return "no container"
        state = attrs.get("State") or {}
        said = [f"container {state.get('Status', unit.state)}"]
        if state.get("Status") != "running" and state.get("ExitCode") is not None:
            said.append(f"exit code {state['ExitCode']}")
        if state.get("OOMKilled"):
            said.append("killed for lack of memory")
        if state.get("Error"):
            said.append(str(state["Error"]))
        checks = (state.get("Health") or {}).get("Log") or []
        if checks and checks[-1].get("ExitCode"):
            said.append(f"health check: {str(checks[-1].get('Output', '')).strip()[:200]}")
        return ", ".join(said)

    def _inspect_attrs(self, container_id: str) -> dict[str, Any] | None:
        try:
            attrs: dict[str, Any] = self._client.api.inspect_container(container_id)
        except docker.errors.NotFound:
            return None
        return attrs

    @engine_call("releasing the agents' volumes")
    def release_storage(self, fleet: str, state_root: Path, delete: bool) -> builtins.list[str]:
        return self._volumes.release(fleet, state_root, delete)

    def exec(self, unit_id: str, command: builtins.list[str]) -> tuple[int, str]:
        container = self._get(unit_id)
        if container is None or container.status != "running":
            raise BackendError(f"unit {unit_id[:12]} is not running")
        code, output = container.exec_run(command, user=f"{AGENT_UID}:{AGENT_GID}", workdir=CONTAINER_DATA)
        return int(code), output.decode("utf-8", errors="replace")

    def storage_notes(self) -> dict[str, str]:
        return dict(self._volumes.notes)

    def snapshot_stopped(self, storage: StoppedStorage) -> SnapshotRun:
        return DockerSnapshotRun(self._client, storage)

    def sandbox(self) -> DockerSandbox:
        return DockerSandbox(self._client)

    def memory_usage(self, unit_id: str) -> int | None:
        container = self._get(unit_id)
        if container is None or container.status != "running":
            return None
        try:
            stats = container.stats(stream=False, one_shot=True)
        except docker.errors.APIError:
            return None
        return memory_without_cache(stats)

"""The browser sandbox on the local Docker engine: a throwaway container of the browser image on
a network of its own, whose only way out is the orchestrator's egress proxy.

The network is `internal` (no route out) with inter-container traffic off; the orchestrator holds
the gateway address, where the proxy listens. The container runs as uid 10001 with a read-only
root, every capability dropped, no-new-privileges, /tmp in memory and the memory (swap included),
CPU and pid caps of `tools.browser`. A host firewall chain (`fence`) lets the network reach the
session's proxy port on the gateway and no other address or port of the host. Chromium keeps its DevTools endpoint on the container's
loopback; the container relays one port to it for the gateway address only, which is where the
orchestrator connects from. Agents are on other networks and never get either address.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import docker
import docker.errors
import httpx
import requests.exceptions
from docker.types import LogConfig, Ulimit

from orchestrator.backends.base import LABEL_PREFIX
from orchestrator.browser.fence import FenceFailed, install_fence, remove_fence
from orchestrator.config.browser import BrowserPolicy

log = logging.getLogger(__name__)

LABEL_BROWSER_OF = f"{LABEL_PREFIX}.browser-of"
LABEL_BROWSER_FLEET = f"{LABEL_PREFIX}.browser-fleet"
ICC_OPTION = "com.docker.network.bridge.enable_icc"
RELAY_PORT = 9223
BROWSER_UID = 10001
TMP_BYTES = 256 * 1024 * 1024
SHM_BYTES = 64 * 1024 * 1024
OPEN_FILES = 4096
# Chromium starts in about a second on an idle machine; ten at once on two loaded cores take longer.
READY_WAIT_S = 90.0
DOCKER_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)
ProxyStarter = Callable[[str], Awaitable[int]]
"""Starts the session's egress proxy on the gateway address; the port it listens on."""


class SandboxFailed(Exception):
    """The sandbox could not be made or did not come up; the message says what to do."""


@dataclass(frozen=True)
class SandboxSpec:
    fleet: str
    agent: str
    image: str
    policy: BrowserPolicy
    # The proxy's TLS key for this session: the one certificate key Chromium accepts besides the
    # sites' own, which the proxy verifies.
    proxy_key_hash: str


@dataclass
class BrowserSandbox:
    """One running sandbox: where the orchestrator reaches its DevTools relay."""

    name: str
    network: str
    container: str
    gateway: str
    address: str
    fenced: bool = False

    @property
    def bridge(self) -> str:
        return f"br-{self.network[:12]}"

    @property
    def devtools_url(self) -> str:
        return f"http://{self.address}:{RELAY_PORT}"


class DockerBrowsers:
    """Makes and removes browser sandboxes on the local engine."""

    def __init__(self, client: docker.DockerClient) -> None:
        self._api = client.api

    async def open(self, spec: SandboxSpec, start_proxy: ProxyStarter) -> BrowserSandbox:
        """A running sandbox whose browser sends every request to the proxy `start_proxy` starts
        on the gateway address (it returns the port)."""
        name = f"flotilla-browser-{spec.agent[:24]}-{secrets.token_hex(4)}"
        labels = {LABEL_BROWSER_OF: f"{spec.fleet}/{spec.agent}", LABEL_BROWSER_FLEET: spec.fleet}
        network, gateway = await asyncio.to_thread(self._network, name, labels)
        sandbox = BrowserSandbox(name, network, "", gateway, "")
        try:
            proxy_port = await start_proxy(gateway)
            sandbox.fenced = await asyncio.to_thread(self._fence, sandbox, proxy_port)
            environment = {
                "FLOTILLA_PROXY": f"{gateway}:{proxy_port}",
                "FLOTILLA_CONTROLLER": gateway,
                "FLOTILLA_RELAY_PORT": str(RELAY_PORT),
                "FLOTILLA_WINDOW": spec.policy.window,
                "FLOTILLA_PROXY_KEY": spec.proxy_key_hash,
            }
            sandbox.container = await asyncio.to_thread(self._create, name, spec, labels, environment)
            sandbox.address = await asyncio.to_thread(self._start, sandbox.container, network)
            await _wait_ready(sandbox)
        except BaseException:
            await asyncio.to_thread(self.remove, sandbox)
            raise
        return sandbox

    def remove_left_behind(self, fleet: str) -> int:
        """Remove the fleet's sandboxes (container, fence, network) that a stopped orchestrator left."""
        removed = 0
        try:
            networks = self._api.networks(filters={"label": f"{LABEL_BROWSER_FLEET}={fleet}"})
        except DOCKER_ERRORS:
            return 0
        for found in networks:
            name = str(found.get("Name", ""))
            containers = self._api.containers(all=True, filters={"name": f"^/{name}$"})
            container = str(containers[0]["Id"]) if containers else ""
            self.remove(BrowserSandbox(name, str(found["Id"]), container, "", ""))
            removed += 1
        return removed

    def _fence(self, sandbox: BrowserSandbox, proxy_port: int) -> bool:
        try:
            fenced = install_fence(sandbox.name, sandbox.bridge, sandbox.gateway, proxy_port)
        except FenceFailed as failed:
            raise SandboxFailed(f"the browser sandbox's firewall could not be set: {failed}") from None
        if not fenced:
            log.warning(
                "browser sandbox %s is not fenced (no root or no iptables): a page's own traffic is held "
                "by the proxy, but the sandbox can reach host services listening on %s",
                sandbox.name,
                sandbox.gateway,
            )
        return fenced

    def remove(self, sandbox: BrowserSandbox) -> None:
        if sandbox.container:
            with contextlib.suppress(*DOCKER_ERRORS):
                self._api.remove_container(sandbox.container, force=True)
        with contextlib.suppress(FenceFailed):
            remove_fence(sandbox.name, sandbox.bridge)
        with contextlib.suppress(*DOCKER_ERRORS):
            self._api.remove_network(sandbox.network)

    def memory_used(self, sandbox: BrowserSandbox) -> int:
        """Bytes the sandbox's cgroup uses now (0 when the engine does not say)."""
        try:
            stats = self._api.stats(sandbox.container, stream=False)
        except DOCKER_ERRORS:
            return 0
        return int((stats.get("memory_stats") or {}).get("usage") or 0)

    def _network(self, name: str, labels: dict[str, str]) -> tuple[str, str]:
        try:
            created = self._api.create_network(
                name, driver="bridge", internal=True, options={ICC_OPTION: "false"}, labels=labels
            )
            network = str(created["Id"])
            config = (self._api.inspect_network(network).get("IPAM") or {}).get("Config") or []
        except DOCKER_ERRORS as failed:
            raise SandboxFailed(f"cannot create the browser sandbox's network: {failed}") from None
        gateway = next((entry.get("Gateway") for entry in config if entry.get("Gateway")), None)
        if not gateway:
            with contextlib.suppress(*DOCKER_ERRORS):
                self._api.remove_network(network)
            raise SandboxFailed(f"the network {name} has no gateway address")
        return network, str(gateway).split("/")[0]

    def _create(
        self, name: str, spec: SandboxSpec, labels: dict[str, str], environment: dict[str, str]
    ) -> str:
        policy = spec.policy
        host_config = self._api.create_host_config(
            network_mode=name,
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            tmpfs={"/tmp": f"size={TMP_BYTES},mode=1777,nosuid,nodev"},
            shm_size=SHM_BYTES,
            mem_limit=policy.memory_bytes,
            memswap_limit=policy.memory_bytes,
            nano_cpus=int(policy.cpus * 1e9),
            pids_limit=policy.pids,
            ulimits=[
                Ulimit(name="nofile", soft=OPEN_FILES, hard=OPEN_FILES),
                Ulimit(name="core", soft=0, hard=0),
            ],
            log_config=LogConfig(type="none"),
        )
        try:
            created = self._api.create_container(
                spec.image,
                name=name,
                user=f"{BROWSER_UID}:{BROWSER_UID}",
                hostname="browser",
                labels=labels,
                host_config=host_config,
                environment=environment,
                use_config_proxy=False,
            )
        except docker.errors.ImageNotFound:
            raise SandboxFailed(
                f"browser image {spec.image} not found: build it with `flotilla image build`"
            ) from None
        except DOCKER_ERRORS as failed:
            raise SandboxFailed(f"cannot create the browser sandbox: {failed}") from None
        return str(created["Id"])

    def _start(self, container: str, network: str) -> str:
        """Start the container; its address on its network."""
        try:
            self._api.start(container)
            attrs = self._api.inspect_container(container)
        except DOCKER_ERRORS as failed:
            raise SandboxFailed(f"the browser sandbox did not start: {failed}") from None
        networks = (attrs.get("NetworkSettings") or {}).get("Networks") or {}
        for settings in networks.values():
            if settings.get("NetworkID") == network and settings.get("IPAddress"):
                return str(settings["IPAddress"])
        raise SandboxFailed("the browser sandbox got no address on its network")


async def _wait_ready(sandbox: BrowserSandbox) -> None:
    deadline = time.monotonic() + READY_WAIT_S
    async with httpx.AsyncClient(trust_env=False, timeout=2.0) as client:
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                answer = await client.get(f"{sandbox.devtools_url}/json/version")
                if answer.status_code == 200:
                    return
            await asyncio.sleep(0.2)
    raise SandboxFailed(f"the browser sandbox's DevTools did not answer within {READY_WAIT_S:g} s")

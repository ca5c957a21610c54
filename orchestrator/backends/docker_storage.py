"""Each agent container's own storage: a named volume at /data, with a disk quota.

The orchestrator never opens a path inside an agent's storage. The volume is made and mounted
by the Docker daemon; the quota comes from the kernel: the volume is an ext4 filesystem in a
disk image (`.flotilla/disks/<agent>.img`, sparse, orchestrator-owned) attached to a loop
device. Docker's local driver mounts a block device but does not attach loop devices itself,
so the orchestrator attaches the image and points a stable link (`.flotilla/disks/<agent>.dev`)
at the loop device; the volume names the link. Loop devices do not survive a reboot: they are
attached again before a unit starts and detached when the fleet goes down.

Without root or loop devices, the volume is a plain one (no quota) and the agent's entry in
`storage_notes` says why.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import docker
import docker.errors

from orchestrator.backends.base import (
    AGENT_OWNED,
    LABEL_AGENT,
    LABEL_FLEET,
    LABEL_MANAGED,
    LABEL_STATE,
    AgentSpec,
    BackendError,
    NameConflict,
)

log = logging.getLogger(__name__)

AGENT_UID = 10001
TOKEN_TARGET = "/run/flotilla/token"
FILESYSTEM = "ext4"
COMMAND_TIMEOUT_S = 60.0
# Runs inside the throwaway container of `AgentVolumes._carry`: copies each named path that is
# a real file or folder (never a link at the top) from /previous to /data. With "replace" (a
# restored backup into existing storage) what it replaces goes first, memory.db's WAL included:
# a WAL left beside another database would be replayed into it.
CARRY_SCRIPT = """
import os, shutil, sys
replace = sys.argv[1] == "replace"
for rel in sys.argv[2:]:
    src, dst = os.path.join("/previous", rel), os.path.join("/data", rel)
    if replace and os.path.exists(os.path.join("/previous", "memory.db")) and rel.startswith("memory.db"):
        for old in (dst, dst + "-wal", dst + "-shm"):
            if os.path.lexists(old):
                os.unlink(old)
    if os.path.islink(src) or not os.path.exists(src):
        continue
    if replace and os.path.isdir(dst) and not os.path.islink(dst):
        shutil.rmtree(dst)
    elif replace and os.path.lexists(dst):
        os.unlink(dst)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dst, follow_symlinks=False)
"""
_LOOP_LINE = re.compile(r"^(/dev/loop\d+):")
PARALLEL_RELEASES = 16
_LOOP_DEVICE = re.compile(r"^/dev/(loop\d+)$")


def volume_name(fleet: str, agent: str) -> str:
    return f"flotilla-{fleet}-{agent}-data"


def disk_image(state_root: Path, agent: str) -> Path:
    return state_root / "disks" / f"{agent}.img"


def device_link(state_root: Path, agent: str) -> Path:
    return state_root / "disks" / f"{agent}.dev"


class QuotaUnavailable(Exception):
    """A kernel-enforced quota cannot be had here; the message says why."""


def _run(*command: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as failed:
        raise QuotaUnavailable(f"{command[0]}: {failed}") from None
    if done.returncode != 0:
        raise QuotaUnavailable(f"{' '.join(command[:2])} failed: {done.stderr.strip()[:200]}")
    return done.stdout


def loop_of(image: Path) -> str | None:
    """The loop device the image is attached to, if any."""
    try:
        listing = _run("losetup", "--associated", str(image))
    except QuotaUnavailable:
        return None
    for line in listing.splitlines():
        found = _LOOP_LINE.match(line)
        if found:
            return found.group(1)
    return None


def attached_through(link: Path, image: Path) -> str | None:
    """The loop device `link` points at, when that device holds `image`: read from sysfs, where
    `losetup` would scan every loop device of the machine (a thousand agents, a thousand devices)
    in a process of its own, on every start of every agent."""
    try:
        device = os.readlink(link)
    except OSError:
        return None
    found = _LOOP_DEVICE.match(device)
    if found is None:
        return None
    try:
        backing = Path(f"/sys/block/{found.group(1)}/loop/backing_file").read_text().strip()
    except OSError:
        return None
    return device if backing == os.path.realpath(image) else None


class DiskImages:
    """Sparse ext4 images, their loop devices and the links the volumes name."""

    def usable(self) -> str | None:
        """Why quotas cannot be had here, or None when they can."""
        if os.geteuid() != 0:
            return "attaching a disk image to a loop device needs root"
        for tool in ("losetup", "mkfs.ext4"):
            if shutil.which(tool) is None:
                return f"{tool} is not installed"
        return None

    def make(self, image: Path, size_bytes: int) -> None:
        """A new sparse image with an empty filesystem owned by the agent's user."""
        image.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.ftruncate(fd, size_bytes)
        finally:
            os.close(fd)
        try:
            _run(
                "mkfs.ext4", "-q", "-F", "-m", "0",
                "-E", f"root_owner={AGENT_UID}:{AGENT_UID}", str(image),
            )  # fmt: skip
        except QuotaUnavailable:
            image.unlink(missing_ok=True)
            raise

    def attach(self, image: Path, link: Path) -> str:
        """Attach the image (unless it is already) and point the link at its loop device."""
        info = os.lstat(image)
        if not stat.S_ISREG(info.st_mode):
            raise QuotaUnavailable(f"{image} is not a regular file")
        attached = attached_through(link, image)
        if attached is not None:
            return attached
        # Agents' disks are attached at once, in parallel: `losetup --find` takes a free device
        # from the kernel and tries the next one when another process bound it first.
        device = loop_of(image) or _run("losetup", "--find", "--show", str(image)).strip()
        if not device.startswith("/dev/loop"):
            raise QuotaUnavailable(f"losetup answered {device!r}")
        pending = link.with_name(link.name + ".new")
        pending.unlink(missing_ok=True)
        pending.symlink_to(device)
        pending.replace(link)
        return device

    def detach(self, image: Path, link: Path) -> str | None:
        """Detach the image's loop device (deferred by the kernel while mounted); drop the link."""
        device = attached_through(link, image) or loop_of(image)
        link.unlink(missing_ok=True)
        if device is None:
            return None
        with contextlib.suppress(QuotaUnavailable):
            _run("losetup", "--detach", device)
        return device


class AgentVolumes:
    """The named volumes that hold each agent's /data."""

    def __init__(self, client: docker.DockerClient) -> None:
        self._client = client
        self._disks = DiskImages()
        self.notes: dict[str, str] = {}
        """Agents whose volume has no quota, and why."""

    def ensure(self, spec: AgentSpec) -> str:
        """The agent's volume, made when missing; its quota device attached. Returns its name.
        A new volume receives what `spec.carry_from` holds of the agent's own files."""
        name = volume_name(spec.fleet, spec.agent)
        volume = self._get(name)
        if volume is None:
            self._create(spec, name)
            if spec.carry_from is not None:
                self._carry(spec, name, spec.carry_from)
            return name
        self._check_owner(volume, spec)
        self.reattach(name)
        if spec.carry_from is not None and spec.carry_replaces:
            self._carry(spec, name, spec.carry_from)
        return name

    def reattach(self, name: str) -> None:
        """Before a unit starts: its volume's loop device is there (it may not be after a reboot)."""
        volume = self._get(name)
        if volume is None:
            return
        labels = volume.attrs.get("Labels") or {}
        agent = labels.get(LABEL_AGENT, "")
        device = (volume.attrs.get("Options") or {}).get("device")
        if not device:
            self.notes.setdefault(agent, "its volume was made without one")
            return
        state_root = Path(labels.get(LABEL_STATE, ""))
        link = device_link(state_root, agent)
        if Path(device) != link:
            raise BackendError(f"volume {name} names device {device}, not {link}; remove it with down -v")
        try:
            self._disks.attach(disk_image(state_root, agent), link)
        except (QuotaUnavailable, OSError) as failed:
            raise BackendError(f"the disk of agent {agent} cannot be attached: {failed}") from None

    def _create(self, spec: AgentSpec, name: str) -> str:
        labels = {
            LABEL_MANAGED: "true",
            LABEL_FLEET: spec.fleet,
            LABEL_AGENT: spec.agent,
            LABEL_STATE: str(spec.state_root),
        }
        options = self._quota_options(spec)
        try:
            self._client.volumes.create(name=name, driver="local", driver_opts=options, labels=labels)
        except docker.errors.APIError as exc:
            raise BackendError(f"cannot create volume {name}: {exc.explanation or exc}") from exc
        return name

    def _carry(self, spec: AgentSpec, volume: str, previous: Path) -> None:
        """Copy the agent's own files from a previous-layout folder into its new volume, inside a
        throwaway container of the agent's image: as the agent's user, with no network, the old
        folder read-only. Links are copied as links and resolve only inside that container, so
        nothing the agent planted there can reach a host path."""
        try:
            self._client.containers.run(
                spec.image,
                entrypoint=[
                    "python3",
                    "-c",
                    CARRY_SCRIPT,
                    "replace" if spec.carry_replaces else "add",
                    *AGENT_OWNED,
                ],
                user=f"{AGENT_UID}:{AGENT_UID}",
                volumes={
                    str(previous): {"bind": "/previous", "mode": "ro"},
                    volume: {"bind": "/data", "mode": "rw"},
                },
                network_mode="none",
                read_only=True,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges:true"],
                mem_limit="256m",
                remove=True,
            )
        except docker.errors.DockerException as exc:
            raise BackendError(f"cannot carry {spec.agent}'s files into its new storage: {exc}") from exc

    def _quota_options(self, spec: AgentSpec) -> dict[str, str]:
        if not spec.disk_bytes:
            self.notes[spec.agent] = "none asked for"
            return {}
        why_not = self._disks.usable()
        image = disk_image(spec.state_root, spec.agent)
        link = device_link(spec.state_root, spec.agent)
        try:
            if why_not is not None:
                raise QuotaUnavailable(why_not)
            if not image.exists():
                self._disks.make(image, spec.disk_bytes)
            self._disks.attach(image, link)
        except (QuotaUnavailable, OSError) as failed:
            log.warning("agent %s runs without a disk quota: %s", spec.agent, failed)
            self.notes[spec.agent] = str(failed)
            return {}
        self.notes.pop(spec.agent, None)
        return {"type": FILESYSTEM, "device": str(link)}

    def _get(self, name: str) -> Any | None:
        try:
            return self._client.volumes.get(name)
        except docker.errors.NotFound:
            return None

    def _check_owner(self, volume: Any, spec: AgentSpec) -> None:
        labels = volume.attrs.get("Labels") or {}
        if (
            labels.get(LABEL_MANAGED) != "true"
            or labels.get(LABEL_FLEET) != spec.fleet
            or labels.get(LABEL_AGENT) != spec.agent
            or labels.get(LABEL_STATE) != str(spec.state_root)
        ):
            raise NameConflict(
                f"a volume named {volume.name} exists and does not belong to agent {spec.agent} of this "
                f"fleet folder; remove it (docker volume rm {volume.name}) or rename the fleet"
            )

    def release(self, fleet: str, state_root: Path, delete: bool) -> list[str]:
        """Detach the fleet's disks; with `delete`, remove its volumes and disk images too.
        Several volumes at a time: a fleet of a thousand agents has a thousand of them."""
        filters = {"label": [f"{LABEL_MANAGED}=true", f"{LABEL_FLEET}={fleet}"]}
        ours = [
            volume
            for volume in self._client.volumes.list(filters=filters)
            if (volume.attrs.get("Labels") or {}).get(LABEL_STATE) == str(state_root)
        ]
        with ThreadPoolExecutor(max_workers=PARALLEL_RELEASES) as pool:
            done = pool.map(lambda volume: self._release_one(volume, state_root, delete), ours)
            return [line for lines in done for line in lines]

    def _release_one(self, volume: Any, state_root: Path, delete: bool) -> list[str]:
        done = []
        agent = (volume.attrs.get("Labels") or {}).get(LABEL_AGENT, "")
        image, link = disk_image(state_root, agent), device_link(state_root, agent)
        if delete:
            try:
                volume.remove()
            except docker.errors.APIError as exc:
                raise BackendError(f"cannot remove volume {volume.name}: {exc.explanation or exc}") from exc
            done.append(f"removed volume {volume.name}")
        device = self._disks.detach(image, link)
        if device is not None:
            done.append(f"detached {device} ({agent}'s disk)")
        if delete and image.exists():
            image.unlink()
        return done

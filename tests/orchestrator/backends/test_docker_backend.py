"""DockerBackend and the agent image against the real Docker daemon.

Hardening is checked from `docker inspect` / `docker network inspect` data and from inside
the container; no test sends traffic anywhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import GeneratorType
from typing import Any

import pytest

from orchestrator.backends.base import (
    LABEL_FLEET,
    LABEL_MANAGED,
    AgentSpec,
    BackendError,
    BackendUnavailable,
    NameConflict,
)
from orchestrator.backends.docker import (
    AGENT_UID,
    ICC_OPTION,
    DockerBackend,
    memory_without_cache,
    network_name,
    unit_info,
)
from orchestrator.backends.docker_storage import TOKEN_TARGET, DiskImages, loop_of, volume_name
from orchestrator.fleet.scaffold import write_token
from orchestrator.images.build import DEFAULT_TAG, LABEL_INPUTS_HASH, ImageBuildResult
from orchestrator.state.paths import StatePaths
from tests.docker_fixtures import unique

SLEEP = ["python3", "-c", "print('agent up'); print('second line'); import time; time.sleep(120)"]
SECRET_LOOKING = re.compile(r"KEY|SECRET|TOKEN|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
MIB = 1024 * 1024


def make_spec(
    fleet: str, agent: str, image: str, root: Path, url: str, disk_bytes: int | None = None
) -> AgentSpec:
    """A spec as the fleet manager makes it: `root` stands for the fleet folder."""
    paths = StatePaths(root / ".flotilla")
    return AgentSpec(
        fleet=fleet,
        agent=agent,
        image=image,
        data_dir=paths.agent_storage(agent),
        orchestrator_url=url,
        config_hash="cfg-" + agent,
        memory_bytes=96 * MIB,
        cpus=0.5,
        pids=64,
        env={"FLOTILLA_LOG_LEVEL": "info"},
        token_file=write_token(paths, agent, "not-a-real-token"),
        disk_bytes=disk_bytes,
    )


@pytest.fixture
def backend(docker_client: Any, agent_image: ImageBuildResult) -> DockerBackend:
    return DockerBackend(docker_client, command=SLEEP)


@pytest.fixture
def running(
    backend: DockerBackend, fleet: str, agent_image: ImageBuildResult, tmp_path: Path
) -> Iterator[tuple[AgentSpec, str, str]]:
    """One agent container started by the backend: (spec, container id, gateway)."""
    gateway = backend.prepare_fleet(fleet)
    spec = make_spec(fleet, "scout", agent_image.tag, tmp_path, f"http://{gateway}:9")
    unit = backend.create(spec)
    backend.start(unit.id)
    yield spec, unit.id, gateway
    backend.remove(unit.id)
    backend.release_storage(fleet, spec.state_root, delete=True)


# --- without a daemon ------------------------------------------------------------------------


def test_no_daemon_is_one_line_with_a_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    with pytest.raises(BackendUnavailable) as caught:
        DockerBackend()
    message = str(caught.value)
    assert "\n" not in message
    assert "--runtime process" in message
    assert "absent.sock" in message


def test_memory_is_counted_like_docker_stats() -> None:
    v1 = {"memory_stats": {"usage": 50 * MIB, "stats": {"total_inactive_file": 8 * MIB, "cache": 10 * MIB}}}
    v2 = {"memory_stats": {"usage": 50 * MIB, "stats": {"inactive_file": 5 * MIB}}}
    assert memory_without_cache(v1) == 42 * MIB
    assert memory_without_cache(v2) == 45 * MIB
    assert memory_without_cache({"memory_stats": {}}) is None


def test_unit_info_from_inspect_data() -> None:
    info = unit_info(
        {
            "Id": "abc",
            "Name": "/flotilla-f-a",
            "RestartCount": 2,
            "Config": {"Labels": {"io.flotilla.agent": "a", "io.flotilla.fleet": "f"}},
            "State": {
                "Status": "exited",
                "ExitCode": 3,
                "StartedAt": "2025-05-01T10:00:00.123456789Z",
                "Health": {"Status": "unhealthy"},
            },
        }
    )
    assert (info.name, info.agent, info.fleet, info.state, info.health) == (
        "flotilla-f-a",
        "a",
        "f",
        "exited",
        "unhealthy",
    )
    assert info.exit_code == 3 and info.restart_count == 2
    assert info.started_at is not None and info.started_at.year == 2025


# --- hardening -------------------------------------------------------------------------------


@pytest.mark.docker
def test_container_is_hardened(docker_client: Any, running: tuple[AgentSpec, str, str]) -> None:
    spec, unit_id, _ = running
    attrs = docker_client.api.inspect_container(unit_id)
    config, host = attrs["Config"], attrs["HostConfig"]
    assert config["User"] == f"{AGENT_UID}:{AGENT_UID}"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"] and not host["CapAdd"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert host["Privileged"] is False
    assert host["Memory"] == spec.memory_bytes
    assert host["NanoCpus"] == int(spec.cpus * 1e9)
    assert host["PidsLimit"] == spec.pids
    assert host["Tmpfs"] == {"/tmp": "size=16m,mode=1777"}
    assert host["RestartPolicy"]["Name"] in ("no", "")
    assert not host["PortBindings"] and not host["PublishAllPorts"]
    assert not config.get("ExposedPorts")
    assert not attrs["NetworkSettings"]["Ports"]
    assert spec.labels.items() <= config["Labels"].items()
    assert config["Healthcheck"]["Test"] == ["CMD", "python3", "-m", "agent_runtime.health"]
    assert config["Healthcheck"]["Interval"] == 30 * 10**9
    # No host folder is shared: /data is the agent's own volume, the token one read-only file.
    mounts = sorted(
        (m["Type"], m.get("Name") or m["Source"], m["Destination"], m["RW"]) for m in attrs["Mounts"]
    )
    assert mounts == [
        ("bind", str(spec.token_file), TOKEN_TARGET, False),
        ("volume", volume_name(spec.fleet, "scout"), "/data", True),
    ]


@pytest.mark.docker
def test_the_cpu_limit_changes_in_place(
    docker_client: Any, backend: DockerBackend, running: tuple[AgentSpec, str, str]
) -> None:
    spec, unit_id, _ = running
    assert backend.set_cpus(unit_id, 2.0)
    assert docker_client.api.inspect_container(unit_id)["HostConfig"]["NanoCpus"] == 2 * 10**9
    assert backend.set_cpus(unit_id, spec.cpus)
    assert docker_client.api.inspect_container(unit_id)["HostConfig"]["NanoCpus"] == int(spec.cpus * 1e9)
    with pytest.raises(BackendError, match="cannot change the CPU limit"):
        backend.set_cpus("no-such-container", 2.0)


@pytest.mark.docker
def test_environment_holds_no_secret(docker_client: Any, running: tuple[AgentSpec, str, str]) -> None:
    _, unit_id, gateway = running
    env = dict(item.split("=", 1) for item in docker_client.api.inspect_container(unit_id)["Config"]["Env"])
    assert env["FLOTILLA_URL"] == f"http://{gateway}:9"
    assert env["FLOTILLA_AGENT"] == "scout"
    assert env["FLOTILLA_DATA"] == "/data"
    assert env["FLOTILLA_LOG_LEVEL"] == "info"
    assert [name for name in env if SECRET_LOOKING.search(name)] == []
    assert "not-a-real-token" not in " ".join(env.values())


@pytest.mark.docker
def test_secret_looking_env_is_refused(backend: DockerBackend, fleet: str, tmp_path: Path) -> None:
    backend.prepare_fleet(fleet)
    spec = make_spec(fleet, "leaky", DEFAULT_TAG, tmp_path, "http://127.0.0.1:9")
    leaky = AgentSpec(**{**spec.__dict__, "env": {"OPENAI_API_KEY": "sk-x"}})
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        backend.create(leaky)
    assert backend.inspect(leaky.unit_name).state == "missing"


@pytest.mark.docker
def test_only_the_fleet_network_which_is_internal_without_icc(
    docker_client: Any, running: tuple[AgentSpec, str, str]
) -> None:
    spec, unit_id, gateway = running
    attrs = docker_client.api.inspect_container(unit_id)
    assert list(attrs["NetworkSettings"]["Networks"]) == [network_name(spec.fleet)]
    network = docker_client.api.inspect_network(network_name(spec.fleet))
    assert network["Internal"] is True
    assert network["Options"][ICC_OPTION] == "false"
    assert network["Labels"][LABEL_MANAGED] == "true"
    assert network["Labels"][LABEL_FLEET] == spec.fleet
    assert [entry["Gateway"] for entry in network["IPAM"]["Config"]] == [gateway]


@pytest.mark.docker
def test_inside_the_container(docker_client: Any, running: tuple[AgentSpec, str, str]) -> None:
    spec, unit_id, _ = running
    container = docker_client.containers.get(unit_id)

    def run(code: str) -> tuple[int, str]:
        result = container.exec_run(["python3", "-c", code])
        return result.exit_code, result.output.decode()

    assert run("import os; print(os.getuid(), os.getgid())") == (0, f"{AGENT_UID} {AGENT_UID}\n")
    code, output = run("open('/etc/probe', 'w')")
    assert code != 0 and "Read-only file system" in output
    assert run("open('/tmp/probe', 'w').write('x')")[0] == 0
    assert run("open('/data/probe', 'w').write('x')")[0] == 0
    assert run("import os; print(os.stat('/data/probe').st_uid)") == (0, f"{AGENT_UID}\n")
    assert not spec.data_dir.exists(), "the agent's storage is not a host folder"
    # The token is readable by the agent and by nobody else on the host; the agent cannot change it.
    assert run(f"print(open('{TOKEN_TARGET}').read().strip())") == (0, "not-a-real-token\n")
    code, output = run(f"open('{TOKEN_TARGET}', 'w')")
    assert code != 0 and "Read-only file system" in output
    assert spec.token_file is not None
    token = spec.token_file.stat()
    assert token.st_uid == os.geteuid() and stat.S_IMODE(token.st_mode) & 0o007 == 0
    assert stat.S_IMODE(spec.token_file.parent.stat().st_mode) == 0o700
    code, output = run("import os; os.setuid(0)")
    assert code != 0 and "PermissionError" in output


@pytest.mark.docker
def test_inspect_list_logs_and_memory(backend: DockerBackend, running: tuple[AgentSpec, str, str]) -> None:
    spec, unit_id, _ = running
    info = backend.inspect(unit_id)
    assert (info.name, info.agent, info.fleet, info.state) == (spec.unit_name, "scout", spec.fleet, "running")
    assert info.config_hash == "cfg-scout" and info.started_at is not None
    assert [unit.id for unit in backend.list({LABEL_FLEET: spec.fleet})] == [unit_id]
    assert backend.list({LABEL_FLEET: spec.fleet + "-other"}) == []
    lines = []
    followed = backend.logs(unit_id, follow=True)
    assert isinstance(followed, GeneratorType)
    for line in followed:
        lines.append(line)
        if len(lines) == 2:
            break
    followed.close()
    assert lines == ["agent up", "second line"]
    assert list(backend.logs(unit_id, tail=1)) == ["second line"]
    used = backend.memory_usage(unit_id)
    assert used is not None and 0 < used < spec.memory_bytes
    backend.stop(unit_id, timeout_s=1)
    stopped = backend.inspect(unit_id)
    assert stopped.state == "exited" and stopped.exit_code is not None
    assert backend.memory_usage(unit_id) is None


# --- storage and its quota -------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.skipif(os.geteuid() != 0, reason="loop devices need root; without it the volume has no quota")
def test_a_write_past_the_disk_quota_fails_with_enospc_and_spares_the_host(
    docker_client: Any, backend: DockerBackend, fleet: str, agent_image: ImageBuildResult, tmp_path: Path
) -> None:
    backend.prepare_fleet(fleet)
    spec = make_spec(fleet, "filler", agent_image.tag, tmp_path, "http://127.0.0.1:9", disk_bytes=256 * MIB)
    unit = backend.run(spec)
    try:
        assert "filler" not in backend.storage_notes(), backend.storage_notes()
        host_free = os.statvfs(tmp_path)
        free_before = host_free.f_bavail * host_free.f_frsize
        _, output = docker_client.containers.get(unit.id).exec_run(
            [
                "python3",
                "-c",
                "import os\n"
                "written = 0\n"
                "try:\n"
                "    with open('/data/fill', 'wb') as out:\n"
                "        for _ in range(1024):\n"
                "            out.write(b'x' * (1 << 20)); written += 1\n"
                "except OSError as e:\n"
                "    print(e.errno, written)\n",
            ],
            user=f"{AGENT_UID}:{AGENT_UID}",
        )
        errno, written_mib = output.decode().split()
        assert errno == "28", output  # ENOSPC
        assert 200 <= int(written_mib) <= 256, written_mib
        host_free = os.statvfs(tmp_path)
        free_after = host_free.f_bavail * host_free.f_frsize
        # The disk image is sparse: the host lost at most the quota, not the gigabyte asked for.
        assert free_before - free_after <= 300 * MIB
    finally:
        backend.remove(unit.id)
        done = backend.release_storage(fleet, spec.state_root, delete=True)
    assert any(line.startswith("detached /dev/loop") for line in done), done
    assert not (spec.state_root / "disks" / "filler.img").exists()
    assert docker_client.volumes.list(filters={"label": f"{LABEL_FLEET}={fleet}"}) == []


@pytest.mark.docker
def test_a_volume_of_another_fleet_folder_is_not_taken(
    docker_client: Any, backend: DockerBackend, fleet: str, agent_image: ImageBuildResult, tmp_path: Path
) -> None:
    backend.prepare_fleet(fleet)
    mine = make_spec(fleet, "scout", agent_image.tag, tmp_path / "one", "http://127.0.0.1:9")
    theirs = make_spec(fleet, "scout", agent_image.tag, tmp_path / "two", "http://127.0.0.1:9")
    unit = backend.create(mine)
    try:
        with pytest.raises(NameConflict, match="volume"):
            backend.create(theirs)
    finally:
        backend.remove(unit.id)
        backend.release_storage(fleet, mine.state_root, delete=True)


# --- names that are not ours -----------------------------------------------------------------


@pytest.mark.docker
def test_foreign_container_with_our_name_is_left_alone(
    docker_client: Any, backend: DockerBackend, fleet: str, agent_image: ImageBuildResult, tmp_path: Path
) -> None:
    backend.prepare_fleet(fleet)
    spec = make_spec(fleet, "scout", agent_image.tag, tmp_path, "http://127.0.0.1:9")
    foreign = docker_client.containers.create(
        agent_image.tag, entrypoint=SLEEP, name=spec.unit_name, network_mode="none"
    )
    try:
        with pytest.raises(NameConflict, match=spec.unit_name):
            backend.create(spec)
        with pytest.raises(NameConflict):
            backend.remove(foreign.id)
        with pytest.raises(NameConflict):
            backend.start(foreign.id)
        foreign.reload()
        assert foreign.status == "created" and foreign.name == spec.unit_name
        assert not spec.data_dir.exists()
    finally:
        foreign.remove(force=True)


@pytest.mark.docker
def test_recreate_replaces_our_own_container(
    backend: DockerBackend, fleet: str, agent_image: ImageBuildResult, tmp_path: Path
) -> None:
    backend.prepare_fleet(fleet)
    spec = make_spec(fleet, "scout", agent_image.tag, tmp_path, "http://127.0.0.1:9")
    first = backend.create(spec)
    second = backend.create(spec)
    assert first.id != second.id
    assert backend.inspect(first.id).state == "missing"
    assert [unit.id for unit in backend.list({LABEL_FLEET: fleet})] == [second.id]


@pytest.mark.docker
def test_units_of_some_agents_are_listed_by_name(
    backend: DockerBackend, fleet: str, agent_image: ImageBuildResult, tmp_path: Path
) -> None:
    backend.prepare_fleet(fleet)
    made = {
        agent: backend.create(make_spec(fleet, agent, agent_image.tag, tmp_path, "http://127.0.0.1:9")).id
        for agent in ("scout", "scout-2", "ranger")
    }
    listed = backend.list_agents(fleet, ["scout", "ranger"])
    assert sorted((unit.agent, unit.id) for unit in listed) == [
        ("ranger", made["ranger"]),
        ("scout", made["scout"]),
    ]
    assert backend.list_agents(fleet, []) == []
    assert backend.list_agents(fleet + "-other", ["scout"]) == []


@pytest.mark.docker
def test_down_removes_only_labelled_containers_and_our_network(
    docker_client: Any, backend: DockerBackend, fleet: str, agent_image: ImageBuildResult, tmp_path: Path
) -> None:
    backend.prepare_fleet(fleet)
    for agent in ("alpha", "beta"):
        spec = make_spec(fleet, agent, agent_image.tag, tmp_path / agent, "http://127.0.0.1:9")
        backend.start(backend.create(spec).id)
    bystander = docker_client.containers.create(
        agent_image.tag,
        entrypoint=SLEEP,
        name=unique("bystander") + f"-{fleet}",
        labels={LABEL_FLEET: fleet},
        network_mode="none",
    )
    try:
        units = backend.list({LABEL_FLEET: fleet})
        assert sorted(unit.agent for unit in units) == ["alpha", "beta"]
        for unit in units:
            backend.remove(unit.id)
        backend.teardown_fleet(fleet)
        backend.release_storage(fleet, tmp_path / "alpha" / ".flotilla", delete=True)
        backend.release_storage(fleet, tmp_path / "beta" / ".flotilla", delete=True)
        assert backend.list({LABEL_FLEET: fleet}) == []
        assert docker_client.volumes.list(filters={"label": f"{LABEL_FLEET}={fleet}"}) == []
        bystander.reload()
        assert bystander.status == "created"
        assert [
            n
            for n in docker_client.networks.list(names=[network_name(fleet)])
            if n.name == network_name(fleet)
        ] == []
    finally:
        bystander.remove(force=True)


@pytest.mark.docker
def test_foreign_network_with_our_name_is_left_alone(
    docker_client: Any, backend: DockerBackend, fleet: str
) -> None:
    foreign = docker_client.networks.create(network_name(fleet), driver="bridge")
    try:
        with pytest.raises(NameConflict):
            backend.prepare_fleet(fleet)
        backend.teardown_fleet(fleet)
        foreign.reload()
        assert foreign.name == network_name(fleet)
    finally:
        foreign.remove()


# --- the image itself ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def image_shell(agent_image: ImageBuildResult) -> Iterator[Any]:
    """One agent container on its own (testcontainers), no network, idling for exec checks."""
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import DockerContainer

    testcontainers_config.ryuk_disabled = True
    container = DockerContainer(
        agent_image.tag, name=unique("image"), entrypoint=SLEEP, network_mode="none", read_only=True
    )
    container.start()
    try:
        yield container
    finally:
        container.stop()


def exec_python(container: Any, code: str) -> tuple[int, str]:
    result = container.exec(["python3", "-c", code])
    return result.exit_code, result.output.decode()


@pytest.mark.docker
def test_image_holds_the_runtime_but_not_the_orchestrator(image_shell: Any) -> None:
    code, output = exec_python(image_shell, "import orchestrator")
    assert code != 0 and "No module named 'orchestrator'" in output
    code, output = exec_python(
        image_shell, "import agent_runtime, sqlite_vec, pydantic, websockets; print('ok')"
    )
    assert (code, output) == (0, "ok\n")
    # The runtime speaks to the gateway over the standard library: neither httpx nor the OpenAI SDK
    # (30 MB) is in the image, nor the cl100k table (tokens are counted in the gateway).
    for module in ("openai", "httpx", "tiktoken"):
        code, output = exec_python(image_shell, f"import {module}")
        assert code != 0 and f"No module named '{module}'" in output
    code, output = exec_python(image_shell, "import pysqlite3")
    assert code != 0
    code, output = exec_python(image_shell, "import runpy; runpy.run_module('pip')")
    assert code != 0 and "No module named pip" in output


@pytest.mark.docker
def test_sqlite_vec_loads_in_debian_sqlite(image_shell: Any) -> None:
    code, output = exec_python(
        image_shell,
        "import sqlite3, sqlite_vec\n"
        "db = sqlite3.connect(':memory:')\n"
        "db.enable_load_extension(True)\n"
        "sqlite_vec.load(db)\n"
        "db.execute('create virtual table v using vec0(e float[2])')\n"
        "db.execute('insert into v(rowid, e) values (1, ?), (2, ?)', ('[0, 1]', '[1, 0]'))\n"
        "print(db.execute('select rowid from v where e match ? and k = ?', ('[0.9, 0.1]', 1)).fetchall())",
    )
    assert (code, output) == (0, "[(2,)]\n")


@pytest.mark.docker
def test_image_config(docker_client: Any, agent_image: ImageBuildResult) -> None:
    config = docker_client.api.inspect_image(agent_image.image_id)["Config"]
    assert config["User"] == "10001:10001"
    assert config["WorkingDir"] == "/data"
    assert config["Entrypoint"] == ["python3", "-m", "agent_runtime"]
    assert config["Healthcheck"]["Test"] == ["CMD", "python3", "-m", "agent_runtime.health"]
    assert config["Labels"][LABEL_INPUTS_HASH] == agent_image.inputs_hash
    names = [item.split("=", 1)[0] for item in config["Env"]]
    assert [name for name in names if SECRET_LOOKING.search(name)] == []
    assert not config.get("ExposedPorts")


@pytest.mark.docker
def test_image_ships_the_checkout_runtime(image_shell: Any, source_snapshot: Path) -> None:
    source = source_snapshot / "agent_runtime" / "__init__.py"
    code, output = exec_python(
        image_shell,
        "import hashlib, agent_runtime; print(hashlib.sha256(open(agent_runtime.__file__, 'rb').read()).hexdigest())",
    )
    assert (code, output) == (0, hashlib.sha256(source.read_bytes()).hexdigest() + "\n")


@pytest.mark.docker
@pytest.mark.skipif(os.geteuid() != 0, reason="loop devices need root")
def test_disks_attached_at_once_each_get_their_own_loop_device(tmp_path: Path) -> None:
    disks = DiskImages()
    images = [tmp_path / f"agent{i}.img" for i in range(8)]
    for image in images:
        disks.make(image, 16 * MIB)
    try:
        with ThreadPoolExecutor(len(images)) as pool:
            devices = list(pool.map(lambda image: disks.attach(image, image.with_suffix(".dev")), images))
        assert len(set(devices)) == len(images), devices
        assert [loop_of(image) for image in images] == devices
        assert [os.readlink(image.with_suffix(".dev")) for image in images] == devices
    finally:
        for image in images:
            disks.detach(image, image.with_suffix(".dev"))
    assert all(loop_of(image) is None for image in images)

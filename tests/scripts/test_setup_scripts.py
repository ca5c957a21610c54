"""The README's set-up path on a machine that lacks what it needs.

`./scripts/demo` and `./scripts/test` run from a copy of the repository's scripts, with a PATH
that holds this machine's commands except debootstrap, chromium, promtool, apt-get, sudo, docker
and id. Containers here reach no package index, so apt-get, sudo, docker and id are small fakes
that record how they were called; the scripts' decisions (what to install, how, or why not) are
what is checked.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HIDDEN = {"debootstrap", "chromium", "promtool", "apt-get", "sudo", "docker", "id", "dockerd"}
SYSTEM_BIN = (Path("/usr/local/bin"), Path("/usr/bin"), Path("/bin"), Path("/usr/sbin"), Path("/sbin"))

# Each fake appends "name args..." to $CALLS.
FAKE_APT_GET = 'echo "apt-get $*" >>"$CALLS"\n'
FAKE_SUDO = (
    'echo "sudo $*" >>"$CALLS"\nif [ "$1" = -n ]; then shift; fi\n[ "$1" = true ] && exit 0\nexec "$@"\n'
)
FAKE_ID = 'if [ "$1" = -u ]; then echo "$FAKE_UID"; else echo "uid=$FAKE_UID"; fi\n'
# A daemon answers; the base image exists only when $FAKE_BASE_IMAGE is set.
FAKE_DOCKER = (
    'echo "docker $*" >>"$CALLS"\n'
    'case "$1 $2" in\n'
    '  "image inspect") [ -n "${FAKE_BASE_IMAGE:-}" ] ;;\n'
    "  *) exit 0 ;;\n"
    "esac\n"
)
FAKE_TOOL = 'echo "$(basename "$0") $*" >>"$CALLS"\n'


@dataclass
class Machine:
    root: Path
    bin: Path
    calls: Path

    def add(self, name: str, body: str) -> None:
        _script(self.bin / name, body)

    def run(self, script: str, *args: str, uid: int = 0, **env: str) -> subprocess.CompletedProcess[str]:
        environment = {
            "PATH": str(self.bin),
            "HOME": str(self.root),
            "CALLS": str(self.calls),
            "FAKE_UID": str(uid),
            **env,
        }
        return subprocess.run(
            ["bash", str(self.root / "scripts" / script), *args],
            env=environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def calls_to(self, program: str) -> list[str]:
        if not self.calls.exists():
            return []
        return [line for line in self.calls.read_text().splitlines() if line.split(" ", 1)[0] == program]


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _bin_without_hidden(bin_dir: Path) -> None:
    """Links to every command of this machine but the hidden ones (first on PATH wins)."""
    bin_dir.mkdir()
    for folder in SYSTEM_BIN:
        if not folder.is_dir():
            continue
        for entry in folder.iterdir():
            target = bin_dir / entry.name
            if entry.name in HIDDEN or target.exists() or target.is_symlink():
                continue
            target.symlink_to(entry)


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    for name in ("demo", "test", "_venv.sh", "_docker.sh", "_apt.sh"):
        source = REPO / "scripts" / name
        (root / "scripts" / name).write_text(source.read_text())
    # The base image's recipe: it records its call (the real one runs debootstrap).
    (root / "images" / "base").mkdir(parents=True)
    (root / "images" / "base" / "build.sh").write_text(
        'echo "build.sh $(id -u) $FLOTILLA_RECIPE_HASH $*" >>"$CALLS"\n'
    )
    pyproject = (REPO / "pyproject.toml").read_bytes()
    (root / "pyproject.toml").write_bytes(pyproject)
    # A virtualenv that is already installed: its commands record their calls.
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    for tool in ("python", "flotilla", "ruff", "mypy", "pytest"):
        _script(venv_bin / tool, FAKE_TOOL)
    stamp_key = hashlib.sha256(pyproject).hexdigest()[:12]
    for extras in ("orchestrator", "dev"):
        (root / ".venv" / f".flotilla-{extras}-{stamp_key}").touch()
    machine = Machine(root, tmp_path / "bin", tmp_path / "calls.log")
    _bin_without_hidden(machine.bin)
    machine.add("id", FAKE_ID)
    machine.add("docker", FAKE_DOCKER)
    machine.add("apt-get", FAKE_APT_GET)
    return machine


def _installs(machine: Machine) -> list[str]:
    return [call for call in machine.calls_to("apt-get") if " install " in f" {call} "]


def test_demo_as_root_installs_debootstrap_and_says_so(machine: Machine) -> None:
    result = machine.run("demo", "-d")

    assert result.returncode == 0, result.stderr
    assert _installs(machine) == ["apt-get install -y -qq debootstrap"]
    assert machine.calls_to("apt-get")[0] == "apt-get update -qq"
    assert "==> installing debootstrap (for building the agent image's Debian base)" in result.stdout
    assert machine.calls_to("flotilla")[-1] == "flotilla up -f fleet.yaml -d"
    assert machine.calls_to("build.sh") == []  # as root, `flotilla up` runs it


@pytest.mark.parametrize("debootstrap", [False, True], ids=["without-debootstrap", "with-debootstrap"])
def test_demo_not_root_without_sudo_refuses_saying_what_to_run(machine: Machine, debootstrap: bool) -> None:
    if debootstrap:
        machine.add("debootstrap", FAKE_TOOL)

    result = machine.run("demo", uid=1000)

    assert result.returncode == 1
    assert "building the agent image's Debian base (flotilla/base:bookworm) needs root" in result.stderr
    assert "sudo ./scripts/demo" in result.stderr and "sudo images/base/build.sh" in result.stderr
    assert machine.calls_to("apt-get") == [] and machine.calls_to("build.sh") == []
    assert not any(call.startswith("flotilla up") for call in machine.calls_to("flotilla"))


def test_demo_not_root_with_sudo_installs_and_builds_the_base_through_sudo(machine: Machine) -> None:
    machine.add("sudo", FAKE_SUDO)

    result = machine.run("demo", uid=1000)

    assert result.returncode == 0, result.stderr
    assert (
        "sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap"
        in machine.calls_to("sudo")
    )
    assert _installs(machine) == ["apt-get install -y -qq debootstrap"]
    assert "sudo -n apt-get install debootstrap" in result.stdout
    recipe = hashlib.sha256((machine.root / "images" / "base" / "build.sh").read_bytes()).hexdigest()[:16]
    # The fake sudo runs the command as the caller; the real one runs it as root.
    assert machine.calls_to("build.sh") == [f"build.sh 1000 {recipe} flotilla/base:bookworm"]
    assert machine.calls_to("flotilla")[-1] == "flotilla up -f fleet.yaml"


@pytest.mark.parametrize(
    ("args", "env"),
    [
        pytest.param((), {"FAKE_BASE_IMAGE": "1"}, id="base-image-present"),
        pytest.param(("--runtime", "process"), {}, id="process-runtime"),
        pytest.param(("--runtime=external",), {}, id="external-runtime"),
    ],
)
def test_demo_installs_nothing_it_does_not_need(
    machine: Machine, args: tuple[str, ...], env: dict[str, str]
) -> None:
    result = machine.run("demo", *args, **env)

    assert result.returncode == 0, result.stderr
    assert machine.calls_to("apt-get") == []
    assert machine.calls_to("flotilla")[-1] == " ".join(("flotilla up -f fleet.yaml", *args))


def test_demo_with_debootstrap_present_installs_nothing(machine: Machine) -> None:
    machine.add("debootstrap", FAKE_TOOL)

    result = machine.run("demo")

    assert result.returncode == 0, result.stderr
    assert machine.calls_to("apt-get") == []


def test_test_script_installs_what_the_tests_need(machine: Machine) -> None:
    result = machine.run("test")

    assert result.returncode == 0, result.stderr
    assert _installs(machine) == ["apt-get install -y -qq debootstrap chromium prometheus"]
    assert machine.calls_to("pytest") == ["pytest "]


def test_test_script_not_root_without_sudo_still_runs_the_tests(machine: Machine) -> None:
    result = machine.run("test", uid=1000)

    assert result.returncode == 0, result.stderr
    assert "the tests that need them will be skipped" in result.stdout
    assert machine.calls_to("apt-get") == []
    assert machine.calls_to("pytest") == ["pytest "]


def test_ci_installs_nothing_of_its_own() -> None:
    """What CI installs, the README's scripts install: CI then fails where a new user would."""
    ci = (REPO / ".ci" / "run").read_text()

    assert "apt-get" not in ci
    assert "pip install" not in ci
    assert "exec ./scripts/test" in ci
    assert os.access(REPO / ".ci" / "run", os.X_OK)

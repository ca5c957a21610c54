"""`./scripts/demo`'s set-up path in a clean Debian container that has no debootstrap.

The container is the offline base image (Debian bookworm, no debootstrap, no network). Its only
apt source is a flat file: repository of the .deb files debootstrap needs beyond what the image
holds, taken from the folder `./scripts/test` fills with `apt-get download` before the tests run
(`.cache/debs`) or from the host's apt cache; the test fetches nothing, the container reaches no
network. The demo's install step then runs the real
apt-get, and debootstrap must be usable afterwards. Docker and `flotilla` are stand-ins inside
the container: a daemon that answers without the base image, and a command that records its call.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.backends.base import BackendUnavailable
from orchestrator.backends.docker import connect_docker
from orchestrator.images.build import BASE_TAG, default_repo_root, ensure_base_image

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
HOST_APT_CACHE = Path("/var/cache/apt/archives")
FETCHED_DEBS = default_repo_root() / ".cache" / "debs"
WANTED = "debootstrap"
ONLY_REQUIRED_DEPENDENCIES = tuple(
    f"--no-{kind}" for kind in ("recommends", "suggests", "conflicts", "breaks", "replaces", "enhances")
)
SCRIPTS = ("demo", "_venv.sh", "_docker.sh", "_apt.sh")

# Inside the container: a daemon that answers and has no base image yet.
FAKE_DOCKER = '#!/bin/sh\ncase "$1" in info) exit 0 ;; *) exit 1 ;; esac\n'
FAKE_FLOTILLA = '#!/bin/sh\necho "flotilla $*" >>/tmp/flotilla-calls\n'
IN_CONTAINER = """
set -eu
rm -f /etc/apt/sources.list /etc/apt/sources.list.d/*
echo 'deb [trusted=yes] file:/debs ./' >/etc/apt/sources.list
if command -v debootstrap >/dev/null; then echo 'debootstrap is already here' >&2; exit 3; fi
cp -a /src /repo
install -m 755 /repo/fake-docker /usr/local/bin/docker
status=0
bash /repo/scripts/demo -d || status=$?
echo "demo exit $status"
echo "flotilla calls: $(cat /tmp/flotilla-calls 2>/dev/null || true)"
debootstrap --version
dpkg-query -W -f '${Status} ${Package}\\n' debootstrap wget
"""


def _docker_or_skip() -> None:
    try:
        ensure_base_image(default_repo_root(), connect_docker())
    except BackendUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs Docker: {exc}")
        pytest.skip(str(exc))


def _base_image_packages() -> set[str]:
    listing = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", BASE_TAG, "dpkg-query", "-W", "-f", "${Package}\n"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return set(listing.stdout.split())


def _host_dependencies(package: str) -> set[str]:
    """The package and what it depends on, recursively, as the host's apt sees them."""
    tree = subprocess.run(
        ["apt-cache", "depends", "--recurse", *ONLY_REQUIRED_DEPENDENCIES, package],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return {line.strip() for line in tree.stdout.splitlines() if line and not line.startswith(" ")}


def _deb_of(package: str) -> Path:
    """The package's .deb, from the folder `./scripts/test` fills or the host's apt cache; the
    test itself fetches nothing (it sends no traffic off this machine)."""
    for folder in (FETCHED_DEBS, HOST_APT_CACHE):
        found = sorted(folder.glob(f"{package}_*.deb"))
        if found:
            return found[-1]
    message = f"no .deb of {package} in {FETCHED_DEBS} or {HOST_APT_CACHE}: ./scripts/test fetches them"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _packages_index(debs: list[Path]) -> str:
    """A flat repository's Packages file: each .deb's control fields, where it is and its hash."""
    stanzas = []
    for deb in debs:
        control = subprocess.run(
            ["dpkg-deb", "-f", str(deb)], capture_output=True, text=True, check=True, timeout=30
        ).stdout.rstrip("\n")
        digest = hashlib.sha256(deb.read_bytes()).hexdigest()
        stanzas.append(f"{control}\nFilename: ./{deb.name}\nSize: {deb.stat().st_size}\nSHA256: {digest}\n")
    return "\n".join(stanzas)


@pytest.fixture
def local_apt_source(tmp_path: Path) -> Path:
    """A flat apt repository holding debootstrap and its dependencies the base image lacks."""
    if shutil.which("apt-cache") is None or shutil.which("dpkg-deb") is None:
        pytest.skip("building a local apt source needs a Debian host (apt-cache, dpkg-deb)")
    _docker_or_skip()
    needed = sorted(_host_dependencies(WANTED) - _base_image_packages())
    assert WANTED in needed
    repository = tmp_path / "debs"
    repository.mkdir()
    debs = [shutil.copy(_deb_of(package), repository) for package in needed]
    (repository / "Packages").write_text(_packages_index([Path(deb) for deb in debs]))
    return repository


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """The demo's scripts, an installed virtualenv whose `flotilla` records its call, a fake docker."""
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    for name in SCRIPTS:
        shutil.copy(REPO / "scripts" / name, root / "scripts" / name)
    pyproject = (REPO / "pyproject.toml").read_bytes()
    (root / "pyproject.toml").write_bytes(pyproject)
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    for tool, body in (("python", "#!/bin/sh\n"), ("flotilla", FAKE_FLOTILLA)):
        (venv_bin / tool).write_text(body)
        (venv_bin / tool).chmod(0o755)
    (root / ".venv" / f".flotilla-orchestrator-{hashlib.sha256(pyproject).hexdigest()[:12]}").touch()
    (root / "fake-docker").write_text(FAKE_DOCKER)
    return root


def test_demo_installs_debootstrap_in_a_clean_container(local_apt_source: Path, demo_copy: Path) -> None:
    result = subprocess.run(
        [
            *("docker", "run", "--rm", "--network", "none"),
            *("-v", f"{local_apt_source}:/debs:ro", "-v", f"{demo_copy}:/src:ro"),
            *(BASE_TAG, "bash", "-c", IN_CONTAINER),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "demo exit 0" in result.stdout, report
    assert "==> installing debootstrap (for building the agent image's Debian base)" in result.stdout
    assert "flotilla calls: flotilla validate -f fleet.yaml\nflotilla up -f fleet.yaml -d" in result.stdout
    assert "debootstrap 1." in result.stdout, report
    assert "install ok installed debootstrap" in result.stdout
    assert "install ok installed wget" in result.stdout

"""The agent container image: what goes in it, whether it is current, and how it is built.

The image is identified by a hash of its inputs (the Dockerfile, every file of
`agent_runtime/`, the container's dependency list and the base image reference), stored as
the image label `io.flotilla.inputs-hash`. A build whose hash already exists is skipped.

Building works without a registry: the base image comes from `images/base/build.sh`
(debootstrap + `docker import`), the Python dependencies from a wheelhouse downloaded on the
host, and the build context is assembled here file by file, so it holds `agent_runtime/` and
nothing else from the repository.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import docker
import docker.errors
from pydantic import BaseModel

from orchestrator.backends.base import BackendUnavailable
from orchestrator.backends.docker import connect_docker
from orchestrator.images.names import DEFAULT_IMAGE

DEFAULT_TAG = DEFAULT_IMAGE
BASE_TAG = "flotilla/base:bookworm"
LABEL_INPUTS_HASH = "io.flotilla.inputs-hash"
LABEL_COMPONENT = "io.flotilla.component"

DOCKERFILE = Path("images/agent/Dockerfile")
BASE_SCRIPT = Path("images/base/build.sh")
WHEELHOUSE = Path("images/wheelhouse")
RUNTIME_PACKAGE = Path("agent_runtime")
REQUIREMENTS_FILE = "requirements.txt"
WHEELHOUSE_STAMP = ".download-key"

# Bookworm ships CPython 3.11 and glibc 2.36: any manylinux wheel up to 2_36 runs there.
IMAGE_PYTHON = "3.11"
IMAGE_PLATFORMS = ("manylinux2014_x86_64", *(f"manylinux_2_{minor}_x86_64" for minor in range(17, 37)))
# pysqlite3-binary only stands in for hosts whose python cannot load SQLite extensions;
# Debian's python3 in the image can.
EXCLUDED_FROM_IMAGE = frozenset({"pysqlite3-binary"})
# Bumped when the way inputs turn into an image changes without any input file changing.
RECIPE_VERSION = "1"

BuildStage = Literal["base", "wheels", "build"]
ProgressFn = Callable[[BuildStage, str], None]
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_ERROR_TAIL_LINES = 15


class ImageError(Exception):
    """Building or finding the agent image failed; the message is meant for the operator."""


class ImageDockerUnavailable(ImageError, BackendUnavailable):
    """No Docker daemon answers."""


class BaseImageError(ImageError):
    """images/base/build.sh failed."""


class WheelhouseError(ImageError):
    """pip could not download the container's dependencies."""


class ImageBuildError(ImageError):
    """docker build failed."""


class ImageBuildResult(BaseModel):
    tag: str
    image_id: str
    inputs_hash: str
    base: str
    built: bool
    """False when an image with the same inputs hash already existed."""
    up_to_date: bool
    size_bytes: int
    duration_s: float


class ImageStatus(BaseModel):
    tag: str
    exists: bool
    image_id: str | None = None
    image_hash: str | None = None
    """The inputs hash the existing image was built from."""
    source_hash: str | None = None
    """The inputs hash of the source tree now; None when the source is not available."""
    size_bytes: int | None = None
    created: str | None = None

    @property
    def up_to_date(self) -> bool:
        return self.exists and self.source_hash is not None and self.image_hash == self.source_hash


def default_repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


# --- inputs and their hash -------------------------------------------------------------------


def image_requirements(pyproject: Path) -> list[str]:
    """The container's dependencies: `[project].dependencies` minus host-only stand-ins."""
    try:
        project = tomllib.loads(pyproject.read_text())["project"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise ImageError(f"cannot read [project].dependencies from {pyproject}: {exc}") from exc
    kept = []
    for requirement in project.get("dependencies", []):
        match = _REQUIREMENT_NAME.match(requirement)
        if match is None:
            raise ImageError(f"{pyproject}: cannot read the dependency {requirement!r}")
        if _normalize(match.group(1)) not in EXCLUDED_FROM_IMAGE:
            kept.append(requirement.strip())
    return sorted(kept)


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_files(repo_root: Path) -> list[Path]:
    """Every file of agent_runtime/ that goes in the image (byte-code caches excluded)."""
    package = repo_root / RUNTIME_PACKAGE
    if not (package / "__init__.py").is_file():
        raise ImageError(f"{package} is not a Python package (no __init__.py)")
    found = [
        path
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in {".pyc", ".pyo"}
    ]
    return sorted(found, key=lambda path: path.relative_to(repo_root).as_posix())


@dataclass(frozen=True)
class ImageInputs:
    """A snapshot of everything the image is made from, read once.

    The hash, the image label and the build context all come from the same bytes, even when
    files change while a build runs.
    """

    base: str
    requirements: list[str]
    files: dict[str, bytes]
    """Repository-relative path -> content: the Dockerfile and agent_runtime's files."""

    def digest(self) -> str:
        sha = hashlib.sha256()
        for part in (f"recipe={RECIPE_VERSION}", f"base={self.base}", *self.requirements):
            sha.update(part.encode() + b"\0")
        for name in sorted(self.files):
            sha.update(name.encode() + b"\0")
            sha.update(hashlib.sha256(self.files[name]).digest())
        return sha.hexdigest()


def collect_inputs(repo_root: Path, base: str | None = None) -> ImageInputs:
    dockerfile = repo_root / DOCKERFILE
    if not dockerfile.is_file():
        raise ImageError(f"no {DOCKERFILE} under {repo_root}: image builds need the Flotilla source tree")
    paths = [dockerfile, *runtime_files(repo_root)]
    return ImageInputs(
        base=base or BASE_TAG,
        requirements=image_requirements(repo_root / "pyproject.toml"),
        files={path.relative_to(repo_root).as_posix(): path.read_bytes() for path in paths},
    )


# --- docker helpers --------------------------------------------------------------------------


def _client(client: docker.DockerClient | None) -> docker.DockerClient:
    if client is not None:
        return client
    try:
        return connect_docker()
    except BackendUnavailable as exc:
        raise ImageDockerUnavailable(str(exc)) from exc


def _find_image(client: docker.DockerClient, ref: str) -> Any | None:
    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def _images_with_hash(client: docker.DockerClient, inputs_hash: str, tag: str) -> list[Any]:
    # An image built FROM the agent image inherits its labels; the component label tells the agent
    # image itself from a fleet's extension of it.
    # The build's stages carry the labels too but no tag: only a tagged image is a finished build,
    # and the one already under the wanted tag comes first, then the oldest (the build predates
    # anything made from it).
    labels = [f"{LABEL_INPUTS_HASH}={inputs_hash}", f"{LABEL_COMPONENT}=agent"]
    tagged = [image for image in client.images.list(filters={"label": labels}) if image.tags]
    builds = [image for image in tagged if not _made_from_another(client, image, tagged)]
    return sorted(builds, key=lambda image: (tag not in image.tags, str(image.attrs.get("Created", ""))))


def _made_from_another(client: docker.DockerClient, image: Any, candidates: list[Any]) -> bool:
    """Whether `image` was built FROM another of the candidates (someone's `FROM flotilla/agent`
    with the labels it inherited): their layers begin its own, or one is among its parents."""
    others = {other.id: other for other in candidates if other.id != image.id}
    if not others:
        return False  # the usual case, a single build: no parents to look up
    layers = _layers(image)
    for other in others.values():
        base = _layers(other)
        if len(base) < len(layers) and layers[: len(base)] == base:
            return True
    parent = str(image.attrs.get("Parent") or "")
    while parent:
        if parent in others:
            return True
        found = _find_image(client, parent)
        parent = str(found.attrs.get("Parent") or "") if found is not None else ""
    return False


def _layers(image: Any) -> list[str]:
    return list((image.attrs.get("RootFS") or {}).get("Layers") or [])


def _result(
    image: Any, *, tag: str, inputs_hash: str, base: str, built: bool, started: float
) -> ImageBuildResult:
    return ImageBuildResult(
        tag=tag,
        image_id=image.id,
        inputs_hash=inputs_hash,
        base=base,
        built=built,
        up_to_date=True,
        size_bytes=int(image.attrs.get("Size", 0)),
        duration_s=round(time.monotonic() - started, 2),
    )


def _no_progress(stage: BuildStage, line: str) -> None:
    return None


def _run_streamed(
    command: list[str], stage: BuildStage, progress: ProgressFn, env: dict[str, str] | None = None
) -> tuple[int, list[str]]:
    """Run a command, passing each output line to progress; return its exit code and last lines."""
    tail: deque[str] = deque(maxlen=_ERROR_TAIL_LINES)
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
        env=env,
    ) as process:
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.rstrip()
            tail.append(line)
            progress(stage, line)
    return process.returncode, list(tail)


# --- base image ------------------------------------------------------------------------------


def ensure_base_image(
    repo_root: Path, client: docker.DockerClient, progress: ProgressFn = _no_progress
) -> None:
    """Build flotilla/base:bookworm with images/base/build.sh when it is missing."""
    if _find_image(client, BASE_TAG) is not None:
        return
    script = repo_root / BASE_SCRIPT
    progress("base", f"{BASE_TAG} is missing: building it with {BASE_SCRIPT} (about a minute)")
    recipe_hash = hashlib.sha256(script.read_bytes()).hexdigest()[:16]
    env = os.environ | {"FLOTILLA_RECIPE_HASH": recipe_hash}
    try:
        code, tail = _run_streamed(["bash", str(script), BASE_TAG], "base", progress, env)
    except OSError as exc:
        raise BaseImageError(f"cannot run {script}: {exc}") from exc
    if code != 0 or _find_image(client, BASE_TAG) is None:
        detail = "\n".join(tail)
        raise BaseImageError(
            f"building the base image failed ({BASE_SCRIPT} exited with {code}); last output:\n{detail}\n"
            "With a registry, build on an official image instead: flotilla image build "
            "--base python:3.11-slim"
        )


# --- wheelhouse ------------------------------------------------------------------------------


def wheelhouse_key(requirements: Iterable[str]) -> str:
    """What a wheelhouse was downloaded for: the requirements, python version and platforms."""
    text = "\n".join([f"python={IMAGE_PYTHON}", *IMAGE_PLATFORMS, *sorted(requirements)])
    return hashlib.sha256(text.encode()).hexdigest()


def wheelhouse_is_current(wheelhouse: Path, requirements: list[str]) -> bool:
    stamp = wheelhouse / WHEELHOUSE_STAMP
    if not stamp.is_file() or stamp.read_text().strip() != wheelhouse_key(requirements):
        return False
    return any(wheelhouse.glob("pip-*.whl")) and (wheelhouse / REQUIREMENTS_FILE).is_file()


def pip_download_command(dest: Path, requirements_file: Path) -> list[str]:
    command = [sys.executable, "-m", "pip", "download", "--dest", str(dest), "--only-binary=:all:"]
    command += ["--python-version", IMAGE_PYTHON, "--implementation", "cp"]
    command += ["--abi", "cp" + IMAGE_PYTHON.replace(".", "")]
    for platform in IMAGE_PLATFORMS:
        command += ["--platform", platform]
    # pip itself rides along so the image can install from the wheelhouse without having pip.
    return [*command, "--requirement", str(requirements_file), "pip"]


def ensure_wheelhouse(
    repo_root: Path,
    requirements: list[str],
    progress: ProgressFn = _no_progress,
    *,
    folder: Path | None = None,
) -> Path:
    """Download the container's wheels for CPython 3.11 on manylinux x86_64, once (into `folder`,
    by default the agent image's wheelhouse)."""
    wheelhouse = folder or repo_root / WHEELHOUSE
    if wheelhouse_is_current(wheelhouse, requirements):
        progress("wheels", f"wheelhouse {WHEELHOUSE} is current")
        return wheelhouse
    wheelhouse.mkdir(parents=True, exist_ok=True)
    for stale in wheelhouse.glob("*.whl"):
        stale.unlink()
    (wheelhouse / WHEELHOUSE_STAMP).unlink(missing_ok=True)
    requirements_file = wheelhouse / REQUIREMENTS_FILE
    requirements_file.write_text("".join(f"{line}\n" for line in requirements))
    progress("wheels", f"downloading wheels into {wheelhouse}")
    command = pip_download_command(wheelhouse, requirements_file)
    try:
        code, tail = _run_streamed(command, "wheels", progress)
    except OSError as exc:
        raise WheelhouseError(f"cannot run pip: {exc}") from exc
    if code != 0:
        detail = "\n".join(tail)
        raise WheelhouseError(
            f"pip download failed (exit {code}) for the container's dependencies; last output:\n{detail}\n"
            "Check that this host reaches its package index and that every dependency has a "
            f"CPython {IMAGE_PYTHON} manylinux x86_64 wheel."
        )
    (wheelhouse / WHEELHOUSE_STAMP).write_text(wheelhouse_key(requirements) + "\n")
    return wheelhouse


# --- build context and build -----------------------------------------------------------------


def _add_file(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = 0
    archive.addfile(info, io.BytesIO(data))


def write_build_context(inputs: ImageInputs, wheelhouse: Path, out: IO[bytes]) -> list[str]:
    """Write the build context as a tar: the Dockerfile, agent_runtime/ and the wheelhouse.

    Returns the member names. Paths mirror the repository so the Dockerfile also builds with
    `docker build -f images/agent/Dockerfile .` from the repository root.
    """
    names = []
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name in sorted(inputs.files):
            _add_file(archive, name, inputs.files[name])
            names.append(name)
        for path in sorted(wheelhouse.iterdir()):
            if path.is_file() and (path.suffix == ".whl" or path.name == REQUIREMENTS_FILE):
                name = f"{WHEELHOUSE.as_posix()}/{path.name}"
                _add_file(archive, name, path.read_bytes())
                names.append(name)
    return names


def _build_stream_lines(chunks: Iterator[dict[str, Any]]) -> Iterator[str]:
    for chunk in chunks:
        if "error" in chunk:
            raise ImageBuildError(f"docker build failed: {str(chunk['error']).strip()}")
        text = chunk.get("stream") or chunk.get("status")
        if text:
            for line in str(text).splitlines():
                if line.strip():
                    yield line.rstrip()


def _docker_build(
    client: docker.DockerClient,
    inputs: ImageInputs,
    wheelhouse: Path,
    *,
    tag: str,
    force: bool,
    progress: ProgressFn,
) -> None:
    with tempfile.TemporaryFile() as context:
        write_build_context(inputs, wheelhouse, context)
        context.seek(0)
        build_from_context(
            client,
            context,
            tag=tag,
            progress=progress,
            dockerfile=DOCKERFILE.as_posix(),
            buildargs={"BASE": inputs.base},
            labels={LABEL_INPUTS_HASH: inputs.digest(), LABEL_COMPONENT: "agent"},
            nocache=force,
        )


def build_from_context(
    client: docker.DockerClient, context: IO[bytes], *, tag: str, progress: ProgressFn, **options: Any
) -> None:
    """`docker build` of a tar context, its output passed to `progress` line by line."""
    try:
        chunks = client.api.build(
            fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True, decode=True, **options
        )
        for line in _build_stream_lines(chunks):
            progress("build", line)
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"docker build of {tag} failed: {exc.explanation or exc}") from exc


def build_image(
    repo_root: Path | None = None,
    *,
    tag: str = DEFAULT_TAG,
    base: str | None = None,
    force: bool = False,
    progress: ProgressFn = _no_progress,
    client: docker.DockerClient | None = None,
) -> ImageBuildResult:
    """Build the agent image unless one with the same inputs hash exists (or force is set)."""
    started = time.monotonic()
    root = repo_root or default_repo_root()
    inputs = collect_inputs(root, base)
    inputs_hash = inputs.digest()
    docker_client = _client(client)
    if not force:
        for image in _images_with_hash(docker_client, inputs_hash, tag):
            if tag not in image.tags:
                image.tag(tag)
            progress("build", f"{tag} is up to date (inputs {inputs_hash[:12]})")
            return _result(
                image, tag=tag, inputs_hash=inputs_hash, base=inputs.base, built=False, started=started
            )
    if base is None:
        ensure_base_image(root, docker_client, progress)
    wheelhouse = ensure_wheelhouse(root, inputs.requirements, progress)
    _docker_build(docker_client, inputs, wheelhouse, tag=tag, force=force, progress=progress)
    image = _find_image(docker_client, tag)
    if image is None:
        raise ImageBuildError(f"docker build finished but {tag} is not there")
    return _result(image, tag=tag, inputs_hash=inputs_hash, base=inputs.base, built=True, started=started)


def image_status(
    repo_root: Path | None = None,
    *,
    tag: str = DEFAULT_TAG,
    base: str | None = None,
    client: docker.DockerClient | None = None,
) -> ImageStatus:
    """The image under tag, and whether it was built from the source tree as it is now."""
    root = repo_root or default_repo_root()
    source_hash = collect_inputs(root, base).digest() if (root / DOCKERFILE).is_file() else None
    image = _find_image(_client(client), tag)
    if image is None:
        return ImageStatus(tag=tag, exists=False, source_hash=source_hash)
    labels = image.attrs.get("Config", {}).get("Labels") or {}
    return ImageStatus(
        tag=tag,
        exists=True,
        image_id=image.id,
        image_hash=labels.get(LABEL_INPUTS_HASH),
        source_hash=source_hash,
        size_bytes=int(image.attrs.get("Size", 0)),
        created=image.attrs.get("Created"),
    )


def ensure_image(
    repo_root: Path | None = None,
    *,
    tag: str = DEFAULT_TAG,
    base: str | None = None,
    rebuild_stale: bool = False,
    progress: ProgressFn = _no_progress,
    client: docker.DockerClient | None = None,
) -> ImageBuildResult:
    """For `flotilla up`: build the image when it is missing (or stale, if asked).

    A stale image is used as it is unless rebuild_stale is set; the result says so
    (up_to_date=False) so the caller can warn. Without a source tree (an installed
    package), an existing image is used as it is.
    """
    started = time.monotonic()
    docker_client = _client(client)
    status = image_status(repo_root, tag=tag, base=base, client=docker_client)
    if status.exists and (status.up_to_date or not rebuild_stale or status.source_hash is None):
        return ImageBuildResult(
            tag=tag,
            image_id=status.image_id or "",
            inputs_hash=status.image_hash or "",
            base=base or BASE_TAG,
            built=False,
            up_to_date=status.up_to_date,
            size_bytes=status.size_bytes or 0,
            duration_s=round(time.monotonic() - started, 2),
        )
    if status.source_hash is None:
        raise ImageError(
            f"the agent image {tag} is missing and there is no Flotilla source tree to build it from"
        )
    return build_image(repo_root, tag=tag, base=base, progress=progress, client=docker_client)

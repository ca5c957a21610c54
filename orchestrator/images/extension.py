"""A fleet's extension of the agent image: the MCP SDK and the MCP server packages its agents name.

fleet.yaml's `tools.mcp[].package` lists pip requirements. `flotilla up` (docker runtime) builds,
on top of the agent image, an image that adds them, made offline like the agent image itself:
the wheels are downloaded on the host into a wheelhouse of their own (`images/wheelhouse-ext/`,
together with the agent image's requirements, so that one resolution picks every version), and
the build installs the extension's packages from it without any index into `/opt/flotilla/ext`,
which comes after the agent runtime's own packages on the PYTHONPATH (the runtime's versions win
where both have one).

The image is tagged `<agent image>-ext-<hash>`, the hash covering the agent image's id and the
packages; an existing image with that tag is used as it is. A fleet that names no package runs
the agent image unchanged.
"""

from __future__ import annotations

import hashlib
import tarfile
import tempfile
from pathlib import Path

import docker
import docker.errors

from orchestrator.config.models import FleetConfig
from orchestrator.images.build import (
    LABEL_COMPONENT,
    REQUIREMENTS_FILE,
    WHEELHOUSE,
    ImageBuildError,
    ImageError,
    ProgressFn,
    _add_file,
    _find_image,
    _no_progress,
    build_from_context,
    default_repo_root,
    ensure_wheelhouse,
    image_requirements,
)

MCP_SDK = "mcp>=1.20"
EXTENSION_FILE = "extension.txt"
# Next to the agent image's wheelhouse; downloaded again only when the requirements change.
EXTENSION_WHEELHOUSE = Path(f"{WHEELHOUSE.as_posix()}-ext")
LABEL_EXTENSION = "io.flotilla.extension"
# Both stages inherit the agent image's labels; each says it is not the agent image (the build's
# own labels reach only the last stage), so that looking the agent image up by its labels never
# finds the stage that installed the packages.
EXTENSION_DOCKERFILE = """\
ARG BASE
FROM ${BASE} AS extension
LABEL io.flotilla.component=agent-extension-stage
USER 0
COPY wheels/ /wheels/
RUN set -eu; \\
    pip_wheel="$(ls /wheels/pip-*.whl | head -n 1)"; \\
    python3 "$pip_wheel/pip" install --no-index --find-links /wheels --no-cache-dir \\
        --disable-pip-version-check --no-warn-script-location \\
        --target /opt/flotilla/ext --requirement /wheels/extension.txt; \\
    rm -rf /opt/flotilla/ext/bin; \\
    python3 -m compileall -q /opt/flotilla/ext

FROM ${BASE}
COPY --from=extension /opt/flotilla/ext /opt/flotilla/ext
ENV PYTHONPATH=/opt/flotilla/lib:/opt/flotilla/ext
"""


def extension_packages(config: FleetConfig) -> list[str]:
    """The packages the fleet's agent image needs on top of the runtime's: none, or the SDK and each
    server package named in fleet.yaml."""
    named = {
        server.package for agent in config.agents.values() for server in agent.tools.mcp if server.package
    }
    return sorted({MCP_SDK, *named}) if named else []


def extension_tag(base_tag: str, base_id: str, packages: list[str]) -> str:
    digest = hashlib.sha256("\n".join([base_id, *packages]).encode()).hexdigest()[:12]
    return f"{base_tag}-ext-{digest}"


def planned_extension(
    base_tag: str, config: FleetConfig, client: docker.DockerClient | None = None
) -> tuple[str, bool]:
    """The image `ensure_extension` would give the fleet's agents, and whether it would build it
    (nothing is built here: what `apply --dry-run` says)."""
    packages = extension_packages(config)
    if not packages:
        return base_tag, False
    docker_client = client or docker.from_env()
    base = _find_image(docker_client, base_tag)
    if base is None:
        return base_tag, True
    tag = extension_tag(base_tag, base.id, packages)
    return tag, _find_image(docker_client, tag) is None


def ensure_extension(
    base_tag: str,
    config: FleetConfig,
    *,
    repo_root: Path | None = None,
    progress: ProgressFn = _no_progress,
    client: docker.DockerClient | None = None,
) -> str:
    """The image the fleet's agents run: base_tag itself, or its extension (built when missing)."""
    packages = extension_packages(config)
    if not packages:
        return base_tag
    docker_client = client or docker.from_env()
    base = _find_image(docker_client, base_tag)
    if base is None:
        raise ImageError(f"the agent image {base_tag} is missing: build it first (flotilla image build)")
    tag = extension_tag(base_tag, base.id, packages)
    if _find_image(docker_client, tag) is not None:
        progress("build", f"{tag} is up to date ({', '.join(packages)})")
        return tag
    root = repo_root or default_repo_root()
    runtime = image_requirements(root / "pyproject.toml")
    wheelhouse = ensure_wheelhouse(root, [*runtime, *packages], progress, folder=root / EXTENSION_WHEELHOUSE)
    _build(docker_client, base_tag, tag, wheelhouse, packages, progress)
    return tag


def _build(
    client: docker.DockerClient,
    base_tag: str,
    tag: str,
    wheelhouse: Path,
    packages: list[str],
    progress: ProgressFn,
) -> None:
    progress("build", f"building {tag} with {', '.join(packages)}")
    with tempfile.TemporaryFile() as context:
        with tarfile.open(fileobj=context, mode="w") as archive:
            _add_file(archive, "Dockerfile", EXTENSION_DOCKERFILE.encode())
            _add_file(archive, f"wheels/{EXTENSION_FILE}", "".join(f"{p}\n" for p in packages).encode())
            for path in sorted(wheelhouse.iterdir()):
                if path.is_file() and (path.suffix == ".whl" or path.name == REQUIREMENTS_FILE):
                    _add_file(archive, f"wheels/{path.name}", path.read_bytes())
        context.seek(0)
        build_from_context(
            client,
            context,
            tag=tag,
            progress=progress,
            buildargs={"BASE": base_tag},
            labels={LABEL_EXTENSION: ",".join(packages), LABEL_COMPONENT: "agent-extension"},
        )
    if _find_image(client, tag) is None:
        raise ImageBuildError(f"docker build finished but {tag} is not there")

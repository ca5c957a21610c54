"""The agents' image when `apply` (or `up` on a running orchestrator) changes the fleet's MCP
packages: built before the apply (`image_for`), or named by a dry run without building
(`planned_image`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import click

from orchestrator.cli.common import client_for
from orchestrator.cli.errors import CliError
from orchestrator.config.fleet import LoadedFleet


def image_for(fleet_file: Path, fleet: LoadedFleet, as_json: bool, verbose: bool = False) -> str | None:
    """The image for the agents this apply creates or recreates, when the fleet's MCP packages
    changed: the agent image's extension with the packages fleet.yaml now names, built here (offline,
    with progress lines) as `up` builds it. None: the image in force stays."""
    from rich.console import Console

    from orchestrator.cli.launch_options import fleet_image
    from orchestrator.images.names import base_image

    running = client_for(fleet_file).post("/api/v1/apply", dry_run=True, file=str(fleet_file.resolve()))
    current = str(running.get("image") or "")
    if not current:
        return None
    wanted = fleet_image(base_image(current), fleet.config, Console(stderr=as_json), verbose)
    if wanted == current:
        return None
    if not as_json:
        click.echo(f"image: agents created or recreated from now on run {wanted} (was {current})")
    return wanted


@dataclass(frozen=True)
class ImagePlan:
    """The agents' image an apply would switch to: the fleet's MCP packages changed."""

    current: str
    wanted: str
    build: bool

    def __str__(self) -> str:
        how = "built by this apply" if self.build else "already built"
        return f"~ image    agents created or recreated would run {self.wanted} ({how}; now {self.current})"

    def as_json(self) -> dict[str, object]:
        return {"current": self.current, "wanted": self.wanted, "build": self.build}


def planned_image(fleet_file: Path, fleet: LoadedFleet) -> ImagePlan | None:
    """What `image_for` would do, without building anything."""
    from orchestrator.images.extension import planned_extension
    from orchestrator.images.names import base_image

    running = client_for(fleet_file).post("/api/v1/apply", dry_run=True, file=str(fleet_file.resolve()))
    current = str(running.get("image") or "")
    if not current:
        return None
    try:
        wanted, build = planned_extension(base_image(current), fleet.config)
    except _docker_errors() as exc:
        raise CliError(f"cannot ask Docker about the agent image: {exc}") from None
    return ImagePlan(current, wanted, build) if wanted != current else None


def _docker_errors() -> tuple[type[Exception], ...]:
    import docker.errors

    return (docker.errors.DockerException,)

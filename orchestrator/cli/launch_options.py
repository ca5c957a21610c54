"""What `flotilla up` was asked for, shared by the foreground and the detached launch."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console

from orchestrator.backends.select import Runtime
from orchestrator.cli.errors import CliError
from orchestrator.config.models import FleetConfig


@dataclass(frozen=True)
class LaunchOptions:
    runtime: Runtime
    port: int
    image: str
    log_json: bool = False
    check_image: bool = True


def ensure_agent_image(image: str, console: Console) -> None:
    """Build the agent image when it is missing or older than the source, showing progress."""
    from orchestrator.images.build import ImageError, ensure_image

    def progress(stage: str, line: str) -> None:
        console.print(f"[dim]image {stage}:[/dim] {line.rstrip()}", highlight=False)

    try:
        result = ensure_image(tag=image, rebuild_stale=True, progress=progress)
    except ImageError as exc:
        raise CliError(f"cannot get the agent image {image}: {exc}") from None
    if result.built:
        console.print(f"built {image} in {result.duration_s:.0f}s")
    elif not result.up_to_date:
        console.print(f"[yellow]{image} is older than the source; `flotilla image build` updates it[/yellow]")


def fleet_image(image: str, config: FleetConfig, console: Console) -> str:
    """The image the fleet's agents run: `image`, or its extension with the fleet's MCP server
    packages (fleet.yaml `tools.mcp[].package`), built offline when missing."""
    from orchestrator.images.build import ImageError
    from orchestrator.images.extension import ensure_extension

    def progress(stage: str, line: str) -> None:
        console.print(f"[dim]image {stage}:[/dim] {line.rstrip()}", highlight=False)

    try:
        return ensure_extension(image, config, progress=progress)
    except ImageError as exc:
        raise CliError(f"cannot extend the agent image {image} with the fleet's packages: {exc}") from None

"""What `flotilla up` was asked for, shared by the foreground and the detached launch."""

from __future__ import annotations

import time
from collections import deque
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
    verbose: bool = False
    agent_listen: str | None = None
    """The address agents dial, for the external runtime (its agents run on another engine)."""


# The lines of a build's output shown when it fails (without --verbose).
FAILED_BUILD_TAIL = 40


class BuildOutput:
    """An image build's progress lines: printed as they come with --verbose, else kept and shown
    only when the build fails (pip and docker write hundreds of lines a reader needs only then)."""

    def __init__(self, console: Console, verbose: bool) -> None:
        self._console = console
        self._verbose = verbose
        self.lines: deque[str] = deque(maxlen=FAILED_BUILD_TAIL)
        self.built = False

    def __call__(self, stage: str, line: str) -> None:
        text = f"image {stage}: {line.rstrip()}"
        if stage == "build" and line.startswith("building "):
            self.built = True
        if self._verbose:
            self._console.print(f"[dim]{text}[/dim]", highlight=False)
        else:
            self.lines.append(text)

    def failed(self, message: str) -> CliError:
        """The error to raise, after the last lines of the build's output (unless already shown)."""
        if not self._verbose:
            for line in self.lines:
                self._console.print(line, highlight=False, markup=False)
        return CliError(message)


def ensure_agent_image(image: str, console: Console, verbose: bool = False) -> None:
    """Build the agent image when it is missing or older than the source; says so when it built."""
    from orchestrator.images.build import ImageError, ensure_image

    output = BuildOutput(console, verbose)
    try:
        result = ensure_image(tag=image, rebuild_stale=True, progress=output)
    except ImageError as exc:
        raise output.failed(f"cannot get the agent image {image}: {exc}") from None
    if result.built:
        console.print(f"built {image} in {result.duration_s:.0f}s")
    elif not result.up_to_date:
        console.print(f"[yellow]{image} is older than the source; `flotilla image build` updates it[/yellow]")


def fleet_image(image: str, config: FleetConfig, console: Console, verbose: bool = False) -> str:
    """The image the fleet's agents run: `image`, or its extension with the fleet's MCP server
    packages (fleet.yaml `tools.mcp[].package`), built offline when missing (said when built)."""
    from orchestrator.images.build import ImageError
    from orchestrator.images.extension import ensure_extension, extension_packages

    output = BuildOutput(console, verbose)
    started = time.monotonic()
    try:
        tag = ensure_extension(image, config, progress=output)
    except ImageError as exc:
        raise output.failed(
            f"cannot extend the agent image {image} with the fleet's packages: {exc}"
        ) from None
    if output.built:
        packages = ", ".join(extension_packages(config))
        console.print(f"built {tag} ({packages}) in {time.monotonic() - started:.0f}s")
    ensure_fleet_browser_image(config, console)
    return tag


def ensure_fleet_browser_image(config: FleetConfig, console: Console) -> None:
    """Build the browser sandbox image when some agent has tools.browser (and only then)."""
    if not any(agent.tools.browser is not None for agent in config.agents.values()):
        return
    from orchestrator.browser.image import BrowserImageError, ensure_browser_image
    from orchestrator.images.build import default_repo_root

    try:
        result = ensure_browser_image(default_repo_root())
    except BrowserImageError as exc:
        raise CliError(f"cannot get the browser image: {exc}") from None
    if result.built:
        console.print(f"built {result.tag} in {result.duration_s:.0f}s")

"""`flotilla image build|status`: the agent container image."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from orchestrator.cli.options import echo_json, json_option
from orchestrator.config.units import format_bytes
from orchestrator.images.build import (
    BASE_TAG,
    DEFAULT_TAG,
    BuildStage,
    ImageError,
    build_image,
    default_repo_root,
    image_status,
)

_STAGE_TITLES: dict[BuildStage, str] = {
    "base": "base image",
    "wheels": "wheelhouse",
    "build": "docker build",
}
_STATUS_LINE_WIDTH = 90

_source_option = click.option(
    "--source",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Flotilla source tree holding images/ and agent_runtime/ (default: this installation's).",
)


def _is_milestone(line: str) -> bool:
    """Lines worth keeping on screen without --verbose."""
    return line.startswith(("Step ", "Successfully", "==> ", "downloading", "wheelhouse"))


@click.group("image")
def image() -> None:
    """Build and inspect the agent container image."""


@image.command("build")
@click.option(
    "--base",
    default=None,
    help=f"Base image with Python 3.11, e.g. python:3.11-slim (default: {BASE_TAG}, made offline).",
)
@click.option("--tag", default=DEFAULT_TAG, show_default=True, help="Tag of the agent image.")
@click.option("--force", is_flag=True, help="Rebuild even when an image of the same inputs exists.")
@click.option("--verbose", "-v", is_flag=True, help="Show every line of build output.")
@click.option(
    "--browser",
    is_flag=True,
    help="Build the browser sandbox image instead (tools.browser; `flotilla up` builds it when needed).",
)
@_source_option
def build(base: str | None, tag: str, force: bool, verbose: bool, browser: bool, source: Path | None) -> None:
    """Build the agent image (skipped when the sources have not changed)."""
    console = Console(highlight=False)
    if browser:
        _build_browser(console, source, force)
        return
    with console.status("preparing") as status:

        def progress(stage: BuildStage, line: str) -> None:
            status.update(f"{_STAGE_TITLES[stage]}: {escape(line[:_STATUS_LINE_WIDTH])}")
            if verbose or _is_milestone(line):
                console.print(f"[dim]{_STAGE_TITLES[stage]}[/dim] {escape(line)}", soft_wrap=True)

        try:
            result = build_image(source, tag=tag, base=base, force=force, progress=progress)
        except ImageError as exc:
            raise click.ClickException(str(exc)) from exc
    verb = "built" if result.built else "up to date:"
    console.print(
        f"[green]{verb}[/green] {escape(result.tag)} ({result.image_id[7:19]}, "
        f"{format_bytes(result.size_bytes)}, inputs {result.inputs_hash[:12]}) in {result.duration_s:.1f}s"
    )


def _build_browser(console: Console, source: Path | None, force: bool) -> None:
    from orchestrator.browser.image import BrowserImageError, ensure_browser_image

    with console.status("browser image: debootstrap and chromium (minutes the first time)"):
        try:
            result = ensure_browser_image(source or default_repo_root(), force=force)
        except BrowserImageError as exc:
            raise click.ClickException(str(exc)) from exc
    verb = "built" if result.built else "up to date:"
    console.print(
        f"[green]{verb}[/green] {escape(result.tag)} ({format_bytes(result.size_bytes)}) in {result.duration_s:.1f}s"
    )


@image.command("status")
@click.option("--tag", default=DEFAULT_TAG, show_default=True, help="Tag of the agent image.")
@click.option("--base", default=None, help="Base image the source hash is computed for.")
@click.option("--check", is_flag=True, help="Exit with status 1 unless the image is up to date.")
@_source_option
@json_option
def status(tag: str, base: str | None, check: bool, source: Path | None, as_json: bool) -> None:
    """Show the agent image and whether it matches the source tree."""
    try:
        found = image_status(source or default_repo_root(), tag=tag, base=base)
    except ImageError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(found.model_dump(mode="json"))
        if check and not found.up_to_date:
            raise SystemExit(1)
        return
    table = Table(show_header=False, box=None)
    table.add_row("tag", escape(found.tag))
    if not found.exists:
        table.add_row("image", "[red]missing[/red] (flotilla image build)")
    else:
        table.add_row("image", (found.image_id or "")[7:19])
        table.add_row("size", format_bytes(found.size_bytes or 0))
        table.add_row("created", found.created or "")
        table.add_row("built from", (found.image_hash or "unknown")[:12])
    table.add_row("source", found.source_hash[:12] if found.source_hash else "not available")
    if found.up_to_date:
        table.add_row("state", "[green]up to date[/green]")
    elif found.exists:
        table.add_row("state", "[yellow]out of date[/yellow] (flotilla image build)")
    Console(highlight=False).print(table)
    if check and not found.up_to_date:
        raise SystemExit(1)

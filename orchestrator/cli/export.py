"""`flotilla export kubernetes`: manifests for running the fleet on a Kubernetes cluster."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator.cli.common import load_or_exit
from orchestrator.cli.errors import BadInput, CliError
from orchestrator.cli.options import echo_json, fleet_file_option, json_option
from orchestrator.export.kubernetes import (
    ExportOptions,
    ExportRefused,
    image_warnings,
    orchestrator_address,
    read_tokens,
    render,
    write,
)
from orchestrator.images.names import DEFAULT_IMAGE


@click.group("export")
def export() -> None:
    """Write the fleet as manifests for another engine."""


@export.command("kubernetes")
@fleet_file_option
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Folder to write the manifests into (created if missing).",
)
@click.option(
    "--orchestrator-url",
    required=True,
    metavar="http://ADDRESS:PORT",
    help="Where the agents' pods dial the orchestrator (`up --runtime external --agent-listen`), by IP address.",
)
@click.option("--namespace", default=None, help="Namespace to use (default: flotilla-FLEET).")
@click.option(
    "--agent-image",
    default=DEFAULT_IMAGE,
    show_default=True,
    help="Image of the agents, pinned: a version tag or a digest (a moving tag is warned of).",
)
@click.option("--storage-class", default=None, help="StorageClass of the volumes (default: the cluster's).")
@click.option(
    "--extension-image",
    default=None,
    help="The agent image extended with the fleet's MCP packages, for agents whose servers name a package.",
)
@json_option
def kubernetes(
    fleet_file: Path,
    out_dir: Path,
    orchestrator_url: str,
    namespace: str | None,
    agent_image: str,
    storage_class: str | None,
    extension_image: str | None,
    as_json: bool,
) -> None:
    """Write Kubernetes manifests for the fleet's agents into a folder.

    \b
    The orchestrator runs on a host (`flotilla up --runtime external --agent-listen ADDRESS`);
    the cluster runs the agents, which dial it at --orchestrator-url. Written: one namespace; per
    agent a StatefulSet of one with its own volume (size: resources.disk), ready once the
    orchestrator accepted its check-in, the headless Service that names its pod, and a Secret with
    the token the orchestrator minted for it; NetworkPolicies that let agents reach only the
    orchestrator's address and port, and DNS. Apply with:
        kubectl apply -k OUTPUT
    05-secrets.yaml holds the agents' tokens (mode 0600): keep it out of version control.
    """
    fleet = load_or_exit(fleet_file, secrets=False)
    try:
        address = orchestrator_address(orchestrator_url)
    except ExportRefused as refused:
        raise BadInput(str(refused)) from None
    try:
        options = ExportOptions(
            orchestrator=address,
            agent_image=agent_image,
            storage_class=storage_class,
            namespace=namespace,
            extension_image=extension_image,
        )
        manifests = render(fleet, options, read_tokens(fleet))
        warnings = image_warnings(fleet, options)
    except ExportRefused as refused:
        raise CliError(str(refused)) from None
    paths = write(manifests, out_dir)
    if as_json:
        echo_json(
            {
                "files": [str(path) for path in paths],
                "apply": f"kubectl apply -k {out_dir}",
                "warnings": warnings,
            }
        )
        return
    for path in paths:
        click.echo(f"wrote {path}")
    click.echo(f"apply with: kubectl apply -k {out_dir}")
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)

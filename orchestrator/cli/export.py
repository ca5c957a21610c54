"""`flotilla export kubernetes`: manifests for running the fleet on a Kubernetes cluster."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator.cli.common import fleet_file_option, load_or_exit
from orchestrator.cli.errors import CliError
from orchestrator.cli.options import echo_json, json_option
from orchestrator.export.kubernetes import (
    DEFAULT_ORCHESTRATOR_IMAGE,
    ExportOptions,
    ExportRefused,
    render,
    write,
)
from orchestrator.images.names import DEFAULT_IMAGE

NOT_YET_RUNNABLE = (
    "warning: the orchestrator's StatefulSet runs `flotilla up --runtime kubernetes` from an "
    "orchestrator image; neither is part of this release, so the fleet does not start on a cluster "
    "yet (docs/kubernetes.md says what was validated and what was not)"
)


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
@click.option("--namespace", default=None, help="Namespace to use (default: flotilla-FLEET).")
@click.option("--agent-image", default=DEFAULT_IMAGE, show_default=True, help="Image of the agents.")
@click.option(
    "--orchestrator-image",
    default=DEFAULT_ORCHESTRATOR_IMAGE,
    show_default=True,
    help="Image of the orchestrator.",
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
    namespace: str | None,
    agent_image: str,
    orchestrator_image: str,
    storage_class: str | None,
    extension_image: str | None,
    as_json: bool,
) -> None:
    """Write Kubernetes manifests for the fleet into a folder.

    \b
    One namespace; the orchestrator as a StatefulSet with a volume and a Service; per agent a
    StatefulSet of one with its own volume (size: resources.disk) and a Secret for its token;
    NetworkPolicies that let agents reach only the orchestrator. Apply with:
        kubectl apply -k OUTPUT
    05-secrets.yaml holds the agents' tokens (mode 0600): keep it out of version control.
    """
    fleet = load_or_exit(fleet_file)
    options = ExportOptions(
        agent_image=agent_image,
        orchestrator_image=orchestrator_image,
        storage_class=storage_class,
        namespace=namespace,
        extension_image=extension_image,
    )
    try:
        manifests = render(fleet, options)
    except ExportRefused as refused:
        raise CliError(str(refused)) from None
    paths = write(manifests, out_dir)
    if as_json:
        echo_json(
            {
                "files": [str(path) for path in paths],
                "apply": f"kubectl apply -k {out_dir}",
                "warnings": [NOT_YET_RUNNABLE.removeprefix("warning: ")],
            }
        )
        return
    for path in paths:
        click.echo(f"wrote {path}")
    click.echo(f"apply with: kubectl apply -k {out_dir}")
    click.echo(NOT_YET_RUNNABLE, err=True)

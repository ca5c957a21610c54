"""`flotilla`: declare a fleet of agents in fleet.yaml and run it."""

from __future__ import annotations

import os
import sys

import click

from orchestrator.cli import broker, costs, fleet, image, memory, messages, operator, scheduler
from orchestrator.cli.client import CliError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="flotilla")
def cli() -> None:
    """Flotilla runs a fleet of autonomous AI agents, one hardened container per agent.

    \b
    Start:    flotilla validate && flotilla up
    Inspect:  flotilla ps · flotilla logs AGENT · flotilla events -f
    Talk:     flotilla send AGENT "message" · flotilla chat AGENT
    Stop:     flotilla down [-v]
    """


COMMANDS: list[click.Command] = [
    fleet.validate,
    fleet.schema,
    fleet.up,
    fleet.apply,
    fleet.ps,
    fleet.logs,
    fleet.down,
    fleet.serve,
    messages.send,
    messages.chat,
    scheduler.heartbeat,
    scheduler.runs,
    operator.events,
    operator.workspace,
    broker.inbox,
    broker.trace,
    broker.contracts,
    memory.memory,
    costs.costs,
    image.image,
]
for command in COMMANDS:
    cli.add_command(command)


def main() -> None:
    if not sys.stdout.isatty():
        # Tables piped to a file or another program keep their columns instead of 80-column wrapping.
        os.environ.setdefault("COLUMNS", "160")
    try:
        cli.main(standalone_mode=False)
    except CliError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()

"""`flotilla`: declare a fleet of agents in fleet.yaml and run it."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

# httpx loads its own command-line tool whenever click and rich are installed (as they are for
# this CLI): ~20 ms on every command that makes a request, and in the orchestrator it starts,
# for code that is never used here.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import click

from agent_runtime import collector_paused
from orchestrator.cli.errors import BadInput, CliError, NotRunning
from orchestrator.cli.terminal import echo
from orchestrator.state.check import StateDamaged

# Command name -> (module, attribute). Modules load only when their command runs, so that a
# quick command (ps, send) does not pay for importing the whole orchestrator.
COMMANDS: dict[str, tuple[str, str]] = {
    "validate": ("orchestrator.cli.fleet", "validate"),
    "schema": ("orchestrator.cli.fleet", "schema"),
    "up": ("orchestrator.cli.fleet", "up"),
    "apply": ("orchestrator.cli.fleet", "apply"),
    "ps": ("orchestrator.cli.status", "ps"),
    "logs": ("orchestrator.cli.fleet", "logs"),
    "down": ("orchestrator.cli.fleet", "down"),
    "send": ("orchestrator.cli.messages", "send"),
    "chat": ("orchestrator.cli.messages", "chat"),
    "heartbeat": ("orchestrator.cli.scheduler", "heartbeat"),
    "runs": ("orchestrator.cli.scheduler", "runs"),
    "events": ("orchestrator.cli.operator", "events"),
    "workspace": ("orchestrator.cli.operator", "workspace"),
    "inbox": ("orchestrator.cli.inbox", "inbox"),
    "history": ("orchestrator.cli.history", "history"),
    "trace": ("orchestrator.cli.trace", "trace"),
    "contracts": ("orchestrator.cli.broker", "contracts"),
    "memory": ("orchestrator.cli.memory", "memory"),
    "costs": ("orchestrator.cli.costs", "costs"),
    "limits": ("orchestrator.cli.limits", "limits"),
    "alerts": ("orchestrator.cli.alerts", "alerts"),
    "notifications": ("orchestrator.cli.notifications", "notifications"),
    "channels": ("orchestrator.cli.channels", "channels"),
    "approvals": ("orchestrator.cli.approvals", "approvals"),
    "approve": ("orchestrator.cli.approvals", "approve"),
    "deny": ("orchestrator.cli.approvals", "deny"),
    "image": ("orchestrator.cli.image", "image"),
    "export": ("orchestrator.cli.export", "export"),
    "init": ("orchestrator.cli.init", "init"),
    "stop": ("orchestrator.cli.control", "stop"),
    "start": ("orchestrator.cli.control", "start"),
    "restart": ("orchestrator.cli.control", "restart"),
    "pause": ("orchestrator.cli.control", "pause"),
    "resume": ("orchestrator.cli.control", "resume"),
    "exec": ("orchestrator.cli.control", "exec_command"),
    "move": ("orchestrator.cli.move", "move"),
    "token": ("orchestrator.cli.control", "token"),
    "dashboard": ("orchestrator.cli.control", "dashboard"),
    "completion": ("orchestrator.cli.completion", "completion"),
    "backup": ("orchestrator.cli.backup", "backup"),
    "verify": ("orchestrator.cli.backup", "verify"),
    "restore": ("orchestrator.cli.backup", "restore"),
    "workflow": ("orchestrator.cli.workflow", "workflow"),
    "doctor": ("orchestrator.cli.doctor", "doctor"),
}


EXIT_BAD_INPUT = 2
EXIT_NOT_RUNNING = 3


class LazyGroup(click.Group):
    pause_collector = False
    """Set by `main`, in the `flotilla` process itself: a command's modules load with the garbage
    collector paused, then frozen (`collector_paused`). Left off where the commands run inside
    another program (a test's CliRunner), whose objects a freeze would keep from the collector."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        module_name, attribute = COMMANDS[cmd_name]
        with collector_paused() if self.pause_collector else contextlib.nullcontext():
            module = importlib.import_module(module_name)
        command: click.Command = getattr(module, attribute)
        return command


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(package_name="flotilla")
def cli() -> None:
    """Flotilla runs a fleet of autonomous AI agents, one hardened container per agent.

    \b
    Start:    flotilla validate && flotilla up
    Inspect:  flotilla ps · flotilla history AGENT · flotilla trace ID · flotilla events -F
    Talk:     flotilla send AGENT "message" · flotilla chat AGENT
    Stop:     flotilla down [-v]

    \b
    Exit codes: 0 done · 1 error · 2 invalid input (fleet.yaml, arguments) · 3 no orchestrator
    running · 4 state.db damaged · 5 changes pending (apply --dry-run) · 130 interrupted.
    Shell completion: flotilla completion bash|zsh|fish.
    """


def main() -> None:
    if not sys.stdout.isatty():
        # Tables piped to a file or another program keep their columns instead of 80-column wrapping.
        os.environ.setdefault("COLUMNS", "160")
    LazyGroup.pause_collector = True
    try:
        cli.main(standalone_mode=False)
    except StateDamaged as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except NotRunning as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(EXIT_NOT_RUNNING)
    except BadInput as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except CliError as exc:
        echo(f"error: {exc}", err=True)
        sys.exit(1)
    except click.exceptions.Abort:
        echo("aborted", err=True)
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

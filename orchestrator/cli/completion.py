"""`flotilla completion SHELL`: the shell completion script, to source from the shell's start-up file."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

SHELLS = ("bash", "zsh", "fish")
COMPLETE_VAR = "_FLOTILLA_COMPLETE"
_SETUP = {
    "bash": 'eval "$(flotilla completion bash)"      # in ~/.bashrc',
    "zsh": 'eval "$(flotilla completion zsh)"       # in ~/.zshrc',
    "fish": "flotilla completion fish | source       # in ~/.config/fish/config.fish",
}


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish).

    \b
    bash:  eval "$(flotilla completion bash)"     (add to ~/.bashrc)
    zsh:   eval "$(flotilla completion zsh)"      (add to ~/.zshrc)
    fish:  flotilla completion fish | source      (add to ~/.config/fish/config.fish)
    """
    from orchestrator.cli.main import cli

    completion_class = get_completion_class(shell)
    if completion_class is None:  # click knows every shell in SHELLS; kept for its typing
        raise click.UsageError(f"no completion for {shell}")
    click.echo(completion_class(cli, {}, "flotilla", COMPLETE_VAR).source())

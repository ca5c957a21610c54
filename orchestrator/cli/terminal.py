"""What the CLI prints for people: text that no agent can use to drive the operator's terminal.

Much of what the CLI shows was written by an agent or its model (facts, events, reasons, replies,
problems of a backup): such text may hold escape sequences that set the window title (OSC 0),
plant links (OSC 8), clear the screen (CSI 2J), move the cursor over earlier lines, or reorder
text with bidirectional overrides. Every command prints people's text through `echo` (or
`secho`), which shows each such character as U+FFFD; `one_line` also shows a newline as `⏎`
where one item takes one line, so an agent cannot forge a line of its own. `--json` output is
printed as it is (JSON escapes control characters itself). Text given to rich goes through
`markup_safe`, so that `[link=...]` and the like stay text.

Commands that print an agent's bytes on purpose (`logs`, `workspace cat`, `exec`) stay raw, as
`docker logs` and `cat` do, and say so in their help.
"""

from __future__ import annotations

import re

import click

# C0 controls but tab and newline, DEL, C1 controls; the bidirectional embeddings, overrides and
# isolates; the Unicode line and paragraph separators.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
NEWLINE_MARK = "\N{RETURN SYMBOL}"


def printable(text: str) -> str:
    """`text` with every control character but newline and tab shown as U+FFFD."""
    return CONTROL.sub(REPLACEMENT, text)


def one_line(text: str) -> str:
    """`printable(text)` on one line: newlines shown as ⏎, tabs as a space."""
    return printable(text).replace("\n", NEWLINE_MARK).replace("\t", " ")


def markup_safe(text: str) -> str:
    """Text to interpolate into rich markup: printable, on one line, its brackets escaped."""
    # rich is imported only by the commands that draw with it.
    from rich.markup import escape

    return escape(one_line(text))


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """click.echo for people's text."""
    click.echo(printable(text), err=err, nl=nl)


def secho(text: str, *, fg: str | None = None, err: bool = False) -> None:
    """click.secho for people's text: the style is the CLI's own, the text is made printable."""
    click.secho(printable(text), fg=fg, err=err)

"""The CLI's errors: what it prints as one line for the operator, and with which exit code."""

from __future__ import annotations


class CliError(Exception):
    """An error to print as one line for the operator (exit code 1)."""


class NotRunning(CliError):
    """No orchestrator runs for this fleet, or it does not answer (exit code 3)."""


class BadInput(CliError):
    """The command's input is wrong, e.g. the fleet file it names does not exist (exit code 2)."""


EXIT_INTERRUPTED = 130
"""Ctrl-C, also where it is the usual way to end a command (`events -F`, `logs -F`)."""

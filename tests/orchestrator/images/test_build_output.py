"""An image build's output: hundreds of pip and docker lines are shown with --verbose, else only
their end and only when the build fails."""

from __future__ import annotations

import io

from rich.console import Console

from orchestrator.cli.launch_options import FAILED_BUILD_TAIL, BuildOutput


def test_quiet_unless_verbose_and_the_tail_on_failure() -> None:
    out = io.StringIO()
    output = BuildOutput(Console(file=out, width=200), verbose=False)
    output("build", "building flotilla/agent:x-ext-1 with mcp-server-time")
    for number in range(200):
        output("build", f"pip line {number}")
    assert out.getvalue() == "" and output.built
    error = output.failed("cannot extend the agent image")
    shown = out.getvalue().splitlines()
    assert len(shown) == FAILED_BUILD_TAIL and shown[-1] == "image build: pip line 199"
    assert str(error) == "cannot extend the agent image"

    loud = io.StringIO()
    verbose = BuildOutput(Console(file=loud, width=200), verbose=True)
    verbose("wheels", "wheelhouse is current")
    assert "image wheels: wheelhouse is current" in loud.getvalue()

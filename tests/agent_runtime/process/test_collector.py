"""Loading modules with the garbage collector paused, then frozen."""

from __future__ import annotations

import gc
import subprocess
import sys


def _in_fresh_interpreter(code: str) -> str:
    """A freeze is for the whole process: it is tried in one of its own, not in the test runner."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_the_collector_is_off_in_the_block_and_what_was_made_is_frozen_after() -> None:
    out = _in_fresh_interpreter(
        "import gc\n"
        "from agent_runtime import collector_paused\n"
        "before = gc.get_freeze_count()\n"
        "with collector_paused():\n"
        "    inside = gc.isenabled()\n"
        "    made = [[] for _ in range(1000)]\n"
        "print(inside, gc.isenabled(), gc.get_freeze_count() - before >= 1000)\n"
    )
    assert out == "False True True"


def test_a_collector_that_was_off_stays_off() -> None:
    out = _in_fresh_interpreter(
        "import gc\n"
        "from agent_runtime import collector_paused\n"
        "gc.disable()\n"
        "with collector_paused():\n"
        "    pass\n"
        "print(gc.isenabled())\n"
    )
    assert out == "False"


def test_the_collector_comes_back_when_the_block_fails() -> None:
    out = _in_fresh_interpreter(
        "import gc\n"
        "from agent_runtime import collector_paused\n"
        "try:\n"
        "    with collector_paused():\n"
        "        raise ImportError('no such module')\n"
        "except ImportError:\n"
        "    pass\n"
        "print(gc.isenabled())\n"
    )
    assert out == "True"


def test_the_cli_pauses_the_collector_only_in_its_own_process() -> None:
    """Inside another program (a test's CliRunner) a freeze would keep that program's objects."""
    from orchestrator.cli.main import LazyGroup, cli

    assert isinstance(cli, LazyGroup)
    assert LazyGroup.pause_collector is False
    frozen = gc.get_freeze_count()
    assert cli.get_command(None, "ps") is not None  # type: ignore[arg-type]
    assert gc.get_freeze_count() == frozen


def test_the_flotilla_process_loads_a_command_frozen_and_runs_it_with_the_collector_on() -> None:
    out = _in_fresh_interpreter(
        "import gc, sys\n"
        "from orchestrator.cli import main as entry\n"
        "sys.argv = ['flotilla', 'ps', '--help']\n"
        "try:\n"
        "    entry.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('COLLECTOR', gc.isenabled(), gc.get_freeze_count() > 0)\n"
    )
    assert out.splitlines()[-1] == "COLLECTOR True True"

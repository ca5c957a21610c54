"""The broker's boundaries, read from the code with `ast`: producers queue items through the one
entry (`Inbox.submit`), nothing outside the broker puts into its queue, and other packages
import the broker's names from `orchestrator.broker` only."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import orchestrator.broker
from orchestrator.broker import Inbox

ROOT = Path(__file__).resolve().parents[3]
BROKER = ROOT / "orchestrator" / "broker"
# The unit tests of the broker's own modules may build its parts.
OWN_TESTS = Path(__file__).resolve().parent


def _outside_the_broker(*folders: str) -> Iterator[tuple[Path, ast.Module]]:
    for folder in folders:
        for file in sorted((ROOT / folder).rglob("*.py")):
            if BROKER in file.parents or OWN_TESTS in file.parents:
                continue
            yield file, ast.parse(file.read_text(), str(file))


def _calls_on_inboxes(tree: ast.Module, method: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr == method and "inbox" in ast.unparse(node.func.value).lower():
            yield node


def _where(file: Path, node: ast.AST) -> str:
    return f"{file.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"


def test_nothing_outside_the_broker_puts_into_the_queue() -> None:
    puts = [
        _where(file, call)
        for file, tree in _outside_the_broker("orchestrator", "bench", "tests")
        for call in _calls_on_inboxes(tree, "put")
    ]
    assert not puts, "items queued around Inbox.submit:\n" + "\n".join(puts)
    assert not hasattr(Inbox, "put")


def test_producers_queue_through_submit() -> None:
    producers = {
        str(file.relative_to(ROOT))
        for file, tree in _outside_the_broker("orchestrator")
        for _ in _calls_on_inboxes(tree, "submit")
    }
    # Operator messages, chats, hooks, heartbeats and workflow steps (peer asks and tells are
    # the broker's own).
    assert len(producers) >= 5, producers


def _broker_modules_imported(tree: ast.Module) -> Iterator[tuple[ast.AST, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("orchestrator.broker."):
            yield node, node.module or ""
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("orchestrator.broker."):
                    yield node, alias.name


def test_other_packages_import_the_broker_from_its_surface() -> None:
    reaching_in = [
        f"{_where(file, node)} imports {module}"
        for file, tree in _outside_the_broker("orchestrator", "bench")
        for node, module in _broker_modules_imported(tree)
    ]
    assert not reaching_in, "import these from orchestrator.broker:\n" + "\n".join(reaching_in)


def test_every_name_of_the_surface_loads() -> None:
    for name in orchestrator.broker.__all__:
        assert getattr(orchestrator.broker, name) is not None, name

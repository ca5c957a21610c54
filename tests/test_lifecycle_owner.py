"""Only the lifecycle package asks the engine to start, stop or remove an agent's unit or to
change its CPU limit: every other part requests a transition (`orchestrator.lifecycle`).

Read from the code with `ast`: a call of one of those methods on a receiver named as a backend
(`backend`, `self._backend`, `core.backend`, ...), and any call of `set_cpus`, which no other
interface has. The backends themselves implement the methods and may call their own."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIFECYCLE_METHODS = frozenset({"start", "stop", "remove", "set_cpus"})
OWNERS = ("orchestrator/lifecycle/", "orchestrator/backends/")


def _receiver_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_engine_lifecycle_call(node: ast.AST) -> bool:
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    method = node.func.attr
    if method not in LIFECYCLE_METHODS:
        return False
    return method == "set_cpus" or "backend" in _receiver_name(node.func.value).lower()


def engine_lifecycle_calls(root: Path) -> Iterator[str]:
    """`path:line method` of every engine lifecycle call under `root`/orchestrator outside its owners."""
    for file in sorted((root / "orchestrator").rglob("*.py")):
        relative = file.relative_to(root).as_posix()
        if relative.startswith(OWNERS):
            continue
        for node in ast.walk(ast.parse(file.read_text(), relative)):
            if _is_engine_lifecycle_call(node):
                assert isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                yield f"{relative}:{node.lineno} {node.func.attr}"


def test_only_the_lifecycle_package_calls_the_engines_lifecycle_methods() -> None:
    found = list(engine_lifecycle_calls(ROOT))
    assert not found, "request a transition of orchestrator.lifecycle instead:\n" + "\n".join(found)


def test_the_check_sees_the_calls_it_forbids(tmp_path: Path) -> None:
    module = tmp_path / "orchestrator" / "agents" / "restarts.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "def restart(self, backend, unit):\n"
        "    self._backend.stop(unit.id, timeout_s=5.0)\n"
        "    backend.start(unit.id)\n"
        "    self.core.backend.remove(unit.id)\n"
        "    self._limits.set_cpus(unit.id, 2.0)\n"
        "    self._timer.start()\n"
        "    self._queue.remove(unit)\n"
    )
    owner = tmp_path / "orchestrator" / "lifecycle" / "owner.py"
    owner.parent.mkdir(parents=True)
    owner.write_text("def carry_out(engine_backend, unit_id):\n    engine_backend.stop(unit_id)\n")
    assert list(engine_lifecycle_calls(tmp_path)) == [
        "orchestrator/agents/restarts.py:2 stop",
        "orchestrator/agents/restarts.py:3 start",
        "orchestrator/agents/restarts.py:4 remove",
        "orchestrator/agents/restarts.py:5 set_cpus",
    ]

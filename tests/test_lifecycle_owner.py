"""Only the lifecycle package asks the engine to create, run, start, stop or remove an agent's
unit or to change its CPU limit: every other part requests a transition (`orchestrator.lifecycle`).

Read from the code with `ast`: a use of one of those methods on a receiver named as a backend
(`backend`, `self._backend`, `core.backend`, ...), called or only referenced (handed to
`asyncio.to_thread`, stored, passed on), and any use of `set_cpus`, which no other interface
has. The backends themselves implement the methods and may use their own."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIFECYCLE_METHODS = frozenset({"create", "run", "start", "stop", "remove", "set_cpus"})
OWNERS = ("orchestrator/lifecycle/", "orchestrator/backends/")


def _receiver_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _is_engine_lifecycle_method(node: ast.AST) -> bool:
    if not isinstance(node, ast.Attribute) or node.attr not in LIFECYCLE_METHODS:
        return False
    return node.attr == "set_cpus" or "backend" in _receiver_name(node.value).lower()


def engine_lifecycle_uses(root: Path) -> Iterator[str]:
    """`path:line method` of every use of an engine lifecycle method under `root`/orchestrator
    outside its owners, whether called there or handed on to be called."""
    for file in sorted((root / "orchestrator").rglob("*.py")):
        relative = file.relative_to(root).as_posix()
        if relative.startswith(OWNERS):
            continue
        uses = [
            node
            for node in ast.walk(ast.parse(file.read_text(), relative))
            if isinstance(node, ast.Attribute) and _is_engine_lifecycle_method(node)
        ]
        for node in sorted(uses, key=lambda use: (use.lineno, use.col_offset)):
            yield f"{relative}:{node.lineno} {node.attr}"


def test_only_the_lifecycle_package_uses_the_engines_lifecycle_methods() -> None:
    found = list(engine_lifecycle_uses(ROOT))
    assert not found, "request a transition of orchestrator.lifecycle instead:\n" + "\n".join(found)


def test_the_check_sees_the_calls_and_references_it_forbids(tmp_path: Path) -> None:
    module = tmp_path / "orchestrator" / "agents" / "restarts.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "async def restart(self, backend, unit, spec):\n"
        "    self._backend.stop(unit.id, timeout_s=5.0)\n"
        "    backend.start(unit.id)\n"
        "    self.core.backend.remove(unit.id)\n"
        "    self._limits.set_cpus(unit.id, 2.0)\n"
        "    backend.create(spec)\n"
        "    await asyncio.to_thread(self._backend.run, spec)\n"
        "    await asyncio.to_thread(self._backend.stop, unit.id)\n"
        "    later = backend.remove\n"
        "    self._timer.start()\n"
        "    self._queue.remove(unit)\n"
        "    self._backend.runs_on_demand\n"
        "    await asyncio.to_thread(self._backend.storage_of, unit.id)\n"
    )
    owner = tmp_path / "orchestrator" / "lifecycle" / "owner.py"
    owner.parent.mkdir(parents=True)
    owner.write_text("def carry_out(engine_backend, unit_id):\n    engine_backend.stop(unit_id)\n")
    assert list(engine_lifecycle_uses(tmp_path)) == [
        "orchestrator/agents/restarts.py:2 stop",
        "orchestrator/agents/restarts.py:3 start",
        "orchestrator/agents/restarts.py:4 remove",
        "orchestrator/agents/restarts.py:5 set_cpus",
        "orchestrator/agents/restarts.py:6 create",
        "orchestrator/agents/restarts.py:7 run",
        "orchestrator/agents/restarts.py:8 stop",
        "orchestrator/agents/restarts.py:9 remove",
    ]

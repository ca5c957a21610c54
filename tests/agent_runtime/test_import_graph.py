"""The agent runtime's modules import one another one way only, and never the orchestrator."""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agent_runtime"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, modules: set[str] | None = None) -> set[str]:
    """Every module a file imports, at any depth (a function-level import is a dependency too).

    `from package import name` counts as importing the module `package.name` when that is one of
    `modules`, and the package otherwise."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.add(submodule if modules and submodule in modules else node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def runtime_graph() -> dict[str, set[str]]:
    files = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    known = set(files)
    return {name: (imported(path, known) & known) - {name} for name, path in files.items()}


def test_the_runtime_has_no_import_cycle() -> None:
    graph = runtime_graph()
    # CycleError names the modules of a cycle.
    order = list(graphlib.TopologicalSorter(graph).static_order())
    assert set(order) == set(graph)


def test_memory_jobs_are_defined_apart_from_their_registration() -> None:
    graph = runtime_graph()
    jobs = {
        "agent_runtime.memory.consolidation",
        "agent_runtime.memory.extraction",
        "agent_runtime.memory.review",
    }
    for job in jobs:
        assert "agent_runtime.memory.jobs" in graph[job]
        assert "agent_runtime.memory.maintenance" not in graph[job]
    assert jobs <= graph["agent_runtime.memory.maintenance"]


def test_the_runtime_never_imports_the_orchestrator() -> None:
    offenders = sorted(
        f"{path.relative_to(PACKAGE.parent)} imports {name}"
        for path in PACKAGE.rglob("*.py")
        for name in imported(path)
        if name.split(".")[0] == "orchestrator"
    )
    assert offenders == []

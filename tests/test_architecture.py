"""The product's import graph, read from the code with `ast`: no cycles, no upward imports.

Layers, lowest first: the domain (every module not named below) < `orchestrator.api` (with
`orchestrator.services`, the record of built parts that the routes read) <
the composition root (`orchestrator.wiring`, `orchestrator.server`) < `orchestrator.cli`.
`agent_runtime` never imports `orchestrator`; `orchestrator.testing` may import anything below
the CLI. Imports under `if TYPE_CHECKING:` count: they are the same dependency, only deferred.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("orchestrator", "agent_runtime")

DOMAIN, API, ROOT_LAYER, CLI = 0, 1, 2, 3
LAYER_NAMES = {
    DOMAIN: "the domain",
    API: "orchestrator.api",
    ROOT_LAYER: "the composition root",
    CLI: "the CLI",
}
API_LAYER = ("orchestrator.api", "orchestrator.services")
COMPOSITION_ROOT = ("orchestrator.wiring", "orchestrator.server")
TESTING = "orchestrator.testing"

# HTTP route modules that still live in domain packages: they import `orchestrator.api.deps`
# (and each other) until they move under `orchestrator/api/`. This list empties when they do.
ROUTES_MOVING_TO_API = frozenset(
    {
        "orchestrator.broker.router",
        "orchestrator.scheduler.router",
        "orchestrator.gateway.router",
        "orchestrator.memory_api.router",
        "orchestrator.operator.dashboard_routes",
        "orchestrator.operator.events_routes",
        "orchestrator.operator.metrics_routes",
        "orchestrator.operator.workspace_routes",
    }
)

# Import cycles being taken apart in agent_runtime; each entry is the exact set of modules in one cycle.
PENDING_CYCLES: frozenset[frozenset[str]] = frozenset(
    {
        # The memory jobs and the module that registers them.
        frozenset(
            {
                "agent_runtime.memory.consolidation",
                "agent_runtime.memory.extraction",
                "agent_runtime.memory.maintenance",
                "agent_runtime.memory.review",
            }
        ),
    }
)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for file in (ROOT / package).rglob("*.py"):
            name = ".".join(file.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = file
    return found


MODULES = _modules()


def _imported_names(module: str, node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            is_package = MODULES[module].name == "__init__.py"
            parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
            base = ".".join([*parts, *([node.module] if node.module else [])])
        for alias in node.names:
            yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for module, file in MODULES.items():
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            for name in _imported_names(module, node):
                target = _known(name)
                if target and target != module:
                    graph[module].add(target)
    return graph


GRAPH = _graph()


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_of(module: str) -> int:
    if _within(module, "orchestrator.cli"):
        return CLI
    if any(_within(module, root) for root in COMPOSITION_ROOT):
        return ROOT_LAYER
    if any(_within(module, package) for package in API_LAYER):
        return API
    return DOMAIN


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's strongly connected components, iteratively; only those of two modules or more."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            advanced = False
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_the_graph_is_read_from_the_code() -> None:
    assert "orchestrator.wiring" in GRAPH["orchestrator.cli.launch"]
    assert "orchestrator.state.db" in GRAPH["orchestrator.wiring"]


def test_no_import_cycles() -> None:
    cycles = [cycle for cycle in _cycles(GRAPH) if cycle not in PENDING_CYCLES]
    assert not cycles, "import cycles:\n" + "\n".join(", ".join(sorted(c)) for c in cycles)


def test_agent_runtime_never_imports_the_orchestrator() -> None:
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if _within(module, "agent_runtime")
        for target in targets
        if _within(target, "orchestrator")
    )
    assert not upward, "\n".join(upward)


def _is_allowed(module: str, target: str) -> bool:
    if _within(module, TESTING):
        return layer_of(target) < CLI
    if _within(target, TESTING):
        return False
    if module in ROUTES_MOVING_TO_API:
        return layer_of(target) <= API
    return layer_of(target) <= layer_of(module)


def test_the_allowance_for_routes_still_moving_is_needed() -> None:
    """An entry goes once its module lives under `orchestrator/api/` (or no longer imports it)."""
    stale = sorted(
        module
        for module in ROUTES_MOVING_TO_API
        if not any(layer_of(target) > DOMAIN for target in GRAPH.get(module, ()))
    )
    assert not stale, f"no longer needed in ROUTES_MOVING_TO_API: {stale}"


def test_imports_point_down_the_layers() -> None:
    upward = sorted(
        f"{module} ({LAYER_NAMES[layer_of(module)]}) -> {target} ({LAYER_NAMES[layer_of(target)]})"
        for module, targets in GRAPH.items()
        if _within(module, "orchestrator")
        for target in targets
        if not _is_allowed(module, target)
    )
    assert not upward, "upward imports:\n" + "\n".join(upward)

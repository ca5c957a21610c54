"""The product's import graph, read from the code with `ast`: no cycles, no upward imports.

Layers, lowest first: `agent_runtime` (the wire models both sides share) < the foundation
(`orchestrator.errors`, `orchestrator.state`, `orchestrator.events`, `orchestrator.config`) <
the domain (every module not named here) < `orchestrator.api` (with `orchestrator.services`,
the record of built parts that the routes read) < the composition root (`orchestrator.wiring`,
`orchestrator.server`) < `orchestrator.cli`. Every package names its public surface in
`__all__`, and no package imports another's private modules or names.
`agent_runtime` never imports `orchestrator`; `orchestrator.testing` may import anything below
the CLI. Imports under `if TYPE_CHECKING:` count: they are the same dependency, only deferred.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("orchestrator", "agent_runtime")

RUNTIME, FOUNDATION, DOMAIN, API, ROOT_LAYER, CLI = 0, 1, 2, 3, 4, 5
LAYER_NAMES = {
    RUNTIME: "agent_runtime",
    FOUNDATION: "the foundation",
    DOMAIN: "the domain",
    API: "orchestrator.api",
    ROOT_LAYER: "the composition root",
    CLI: "the CLI",
}
# What every part stands on; a check of fleet.yaml that needs an upper package's knowledge is
# registered by that package (`orchestrator.config.fleet_checks`).
FOUNDATION_LAYER = ("orchestrator.errors", "orchestrator.state", "orchestrator.events", "orchestrator.config")
API_LAYER = ("orchestrator.api", "orchestrator.services")
COMPOSITION_ROOT = ("orchestrator.wiring", "orchestrator.server")
TESTING = "orchestrator.testing"


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
    if _within(module, "agent_runtime"):
        return RUNTIME
    if _within(module, "orchestrator.cli"):
        return CLI
    if any(_within(module, root) for root in COMPOSITION_ROOT):
        return ROOT_LAYER
    if any(_within(module, package) for package in API_LAYER):
        return API
    if any(_within(module, package) for package in FOUNDATION_LAYER):
        return FOUNDATION
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
    cycles = _cycles(GRAPH)
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
    return layer_of(target) <= layer_of(module)


def test_imports_point_down_the_layers() -> None:
    upward = sorted(
        f"{module} ({LAYER_NAMES[layer_of(module)]}) -> {target} ({LAYER_NAMES[layer_of(target)]})"
        for module, targets in GRAPH.items()
        if _within(module, "orchestrator")
        for target in targets
        if not _is_allowed(module, target)
    )
    assert not upward, "upward imports:\n" + "\n".join(upward)


# The packages named for a responsibility, and what each must not import (their docstrings say why).
UPPER_LAYERS = ("orchestrator.api", "orchestrator.cli", *COMPOSITION_ROOT, "orchestrator.services")
FORBIDDEN_IMPORTS: dict[str, tuple[str, ...]] = {
    "orchestrator.control": (
        "orchestrator.fleet",
        "orchestrator.running_agents",
        "orchestrator.images",
        *UPPER_LAYERS,
    ),
    "orchestrator.images": ("orchestrator.fleet", "orchestrator.running_agents", *UPPER_LAYERS),
    "orchestrator.fleet": ("orchestrator.running_agents", *UPPER_LAYERS),
    "orchestrator.running_agents": UPPER_LAYERS,
    "orchestrator.secrets": ("orchestrator.fleet", "orchestrator.running_agents", *UPPER_LAYERS),
    "orchestrator.host_tools": UPPER_LAYERS,
}
# The composition root and the modules every part shares; everything else lives in a package.
TOP_LEVEL_MODULES = {
    "orchestrator.wiring",
    "orchestrator.services",
    "orchestrator.server",
    "orchestrator.errors",
    "orchestrator.events",
    "orchestrator.listeners",
    "orchestrator.logging_setup",
    "orchestrator.loop_calls",
}


def test_packages_keep_to_their_responsibility() -> None:
    crossing = sorted(
        f"{module} -> {target}"
        for package, forbidden in FORBIDDEN_IMPORTS.items()
        for module, targets in GRAPH.items()
        if _within(module, package)
        for target in targets
        if any(_within(target, banned) for banned in forbidden)
    )
    assert not crossing, "imports a package's docstring rules out:\n" + "\n".join(crossing)


def test_the_orchestrators_top_level_holds_packages_and_the_composition_root() -> None:
    top = {
        f"orchestrator.{file.stem}"
        for file in (ROOT / "orchestrator").glob("*.py")
        if file.name != "__init__.py"
    }
    assert top <= TOP_LEVEL_MODULES, f"modules outside a package: {sorted(top - TOP_LEVEL_MODULES)}"


def test_every_package_says_what_it_owns() -> None:
    silent = sorted(
        str(init.relative_to(ROOT))
        for init in (ROOT / "orchestrator").glob("*/__init__.py")
        if not ast.get_docstring(ast.parse(init.read_text()))
    )
    assert not silent, f"packages without a docstring: {silent}"


PACKAGE_INITS = sorted(
    init for init in (ROOT / "orchestrator").rglob("__init__.py") if init.parent != ROOT / "orchestrator"
)


def _surface(init: Path) -> list[str] | None:
    """The names a package's `__init__` lists in `__all__`, or None when it lists none."""
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == "__all__" for target in targets):
            listed = ast.literal_eval(value)
            return list(listed) if isinstance(listed, list) else None
    return None


def _package_name(init: Path) -> str:
    return ".".join(init.parent.relative_to(ROOT).parts)


def test_every_package_names_its_public_surface() -> None:
    silent = sorted(_package_name(init) for init in PACKAGE_INITS if _surface(init) is None)
    assert not silent, f"packages without a literal list __all__: {silent}"


def test_what_a_surface_names_exists() -> None:
    missing = []
    for init in PACKAGE_INITS:
        package = importlib.import_module(_package_name(init))
        for name in _surface(init) or []:
            is_module = (init.parent / f"{name}.py").is_file() or (
                init.parent / name / "__init__.py"
            ).is_file()
            if not is_module and not hasattr(package, name):
                missing.append(f"{_package_name(init)}.{name}")
    assert not missing, f"names in __all__ that do not exist: {missing}"


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports() -> Iterator[str]:
    """Imports, from outside a package, of a module or a name that is private to it (`_name`)."""
    for module, targets in GRAPH.items():
        for target in targets:
            if not _within(module, _package_of(target)) and any(map(_is_private, target.split("."))):
                yield f"{module} -> {target}"
    for module, file in MODULES.items():
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module not in MODULES:
                continue
            if _within(module, _package_of(node.module)):
                continue
            yield from (f"{module} -> {node.module}.{a.name}" for a in node.names if _is_private(a.name))


def test_no_package_imports_what_another_keeps_private() -> None:
    crossing = sorted(set(_private_imports()))
    assert not crossing, "imports of another package's private modules or names:\n" + "\n".join(crossing)

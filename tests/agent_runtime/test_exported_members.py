"""The agent runtime's public surface: what `__all__` promises exists and is documented, and the
orchestrator and the benchmarks reach the runtime through it alone."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agent_runtime
import agent_runtime.memory
import agent_runtime.testing

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "agent-runtime.md"

# Modules outside code may import from; None: every public name of the module (the wire models).
PUBLIC_MODULES: dict[str, list[str] | None] = {
    "agent_runtime": agent_runtime.__all__,
    "agent_runtime.memory": agent_runtime.memory.__all__,
    "agent_runtime.testing": agent_runtime.testing.__all__,
    "agent_runtime.protocol": None,
}

# Benchmarks that measure the runtime's internals, and the internal modules each may import.
BENCH_INTERNALS: dict[str, set[str]] = {
    "bench/bench_broker.py": {
        "agent_runtime.tools.peers",
        "agent_runtime.tools.registry",
        "agent_runtime.transport.client",
    },
    "bench/bench_context.py": {
        "agent_runtime.memory.salience",
        "agent_runtime.memory.store",
        "agent_runtime.tools.build",
        "agent_runtime.work.condense",
        "agent_runtime.work.context",
        "agent_runtime.work.facts",
        "agent_runtime.work.prompt",
        "agent_runtime.work.tokens",
        "agent_runtime.workspace.files",
        "agent_runtime.workspace.history",
        "agent_runtime.workspace.learnings",
        "agent_runtime.workspace.versioned",
    },
    "bench/bench_contradictions.py": {"agent_runtime.memory.truth"},
    "bench/bench_memory.py": {"agent_runtime.memory.search"},
    "bench/soak.py": {
        "agent_runtime.cognition.context",
        "agent_runtime.cognition.runner",
        "agent_runtime.jobs_due",
        "agent_runtime.work.context",
        "agent_runtime.work.erasure",
        "agent_runtime.work.facts",
        "agent_runtime.work.prompt",
        "agent_runtime.work.tokens",
        "agent_runtime.workspace.history",
        "agent_runtime.workspace.learnings",
        "agent_runtime.workspace.versioned",
    },
    "bench/bench_strategies.py": {
        "agent_runtime.cognition.context",
        "agent_runtime.cognition.files",
        "agent_runtime.cognition.runner",
        "agent_runtime.work.condense",
        "agent_runtime.work.context",
        "agent_runtime.work.facts",
        "agent_runtime.work.prompt",
        "agent_runtime.workspace.history",
    },
}


def runtime_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) for every import of agent_runtime in a file, at any depth."""
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "agent_runtime":
                found.append((node.lineno, node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "agent_runtime":
                    found.append((node.lineno, alias.name, []))
    return found


def surface_violations(path: Path, allowed_internals: set[str]) -> list[str]:
    problems = []
    relative = path.relative_to(REPO) if path.is_relative_to(REPO) else Path(path.name)
    for line, module, names in runtime_imports(path):
        if module in allowed_internals:
            continue
        if module not in PUBLIC_MODULES:
            problems.append(f"{relative}:{line} imports internal module {module}")
            continue
        exported = PUBLIC_MODULES[module]
        for name in names:
            public = name in exported if exported is not None else not name.startswith("_")
            if not public:
                problems.append(f"{relative}:{line} imports {module}.{name}, which it does not export")
    return problems


def type_checking_imports() -> dict[str, tuple[str, str]]:
    """Public name -> (module, name) as declared in agent_runtime/__init__.py for type checkers."""
    tree = ast.parse(Path(agent_runtime.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If))
    declared = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        if node.module == "typing":
            continue
        for alias in node.names:
            declared[alias.asname or alias.name] = (node.module, alias.name)
    return declared


def doc_section(doc: Path, title: str) -> str:
    match = re.search(rf"^## {title}\n(.*?)(?=^## |\Z)", doc.read_text(), re.MULTILINE | re.DOTALL)
    assert match, f"{doc} has no '## {title}' section"
    return match.group(1)


def quoted_names(text: str) -> set[str]:
    return set(re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", text))


@pytest.mark.parametrize("module", sorted(name for name, names in PUBLIC_MODULES.items() if names))
def test_every_exported_name_exists_once(module: str) -> None:
    exported = PUBLIC_MODULES[module]
    assert exported is not None
    assert len(exported) == len(set(exported)), f"{module}.__all__ lists a name twice"
    loaded = importlib.import_module(module)
    missing = [name for name in exported if not hasattr(loaded, name)]
    assert missing == [], f"{module}.__all__ names what it does not have: {missing}"


def test_the_lazy_exports_match_what_type_checkers_see() -> None:
    declared = type_checking_imports()
    assert set(agent_runtime.__all__) == set(declared)
    assert declared == agent_runtime._EXPORTS
    for name, (module, attribute) in declared.items():
        assert getattr(agent_runtime, name) is getattr(importlib.import_module(module), attribute)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = agent_runtime.Nothing  # type: ignore[attr-defined]


def test_every_exported_name_is_documented() -> None:
    section = doc_section(DOC, "Public API")
    for module in PUBLIC_MODULES:
        assert f"`{module}`" in section, f"the Public API section does not name {module}"
    for module, doc, title in (
        ("agent_runtime", DOC, "Public API"),
        ("agent_runtime.testing", DOC, "Public API"),
        ("agent_runtime.memory", REPO / "docs" / "memory.md", "Python API"),
    ):
        missing = sorted(set(PUBLIC_MODULES[module] or []) - quoted_names(doc_section(doc, title)))
        assert missing == [], f"{module} exports names {doc.name} does not document: {missing}"


def test_the_orchestrator_imports_only_the_public_surface() -> None:
    problems = []
    for path in sorted((REPO / "orchestrator").rglob("*.py")):
        problems += surface_violations(path, set())
    assert problems == []


def test_benchmarks_import_the_public_surface_or_listed_internals() -> None:
    problems = []
    for path in sorted((REPO / "bench").rglob("*.py")):
        problems += surface_violations(path, BENCH_INTERNALS.get(str(path.relative_to(REPO)), set()))
    assert problems == []


def test_the_check_sees_each_kind_of_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from agent_runtime.workspace.versioned import Workspace\n"
        "from agent_runtime import Worker, Workspace\n"
        "from agent_runtime.protocol import _private\n"
        "def late() -> None:\n    import agent_runtime.transport.channel\n"
    )
    assert surface_violations(bad, set()) == [
        "bad.py:1 imports internal module agent_runtime.workspace.versioned",
        "bad.py:2 imports agent_runtime.Worker, which it does not export",
        "bad.py:3 imports agent_runtime.protocol._private, which it does not export",
        "bad.py:5 imports internal module agent_runtime.transport.channel",
    ]
    assert surface_violations(bad, {"agent_runtime.workspace.versioned"})[0].startswith("bad.py:2")


def test_importing_the_package_loads_none_of_the_runtime() -> None:
    # `python -m agent_runtime` runs the package's __init__ before it reports in with the
    # standard library alone; the public API must not pull pydantic or the channel in first.
    probe = "import sys, agent_runtime; print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'agent_runtime.'))))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"

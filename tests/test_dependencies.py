"""Every package the agent image installs is one the agent runtime imports: the image's
dependencies (`[project].dependencies`) are its wheelhouse, and an unused one is dead weight in
every agent."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Distribution name -> the module it provides, where they differ.
MODULE_OF = {"pyyaml": "yaml", "sqlite-vec": "sqlite_vec", "pysqlite3-binary": "pysqlite3"}


def _runtime_imports() -> set[str]:
    found: set[str] = set()
    for file in (ROOT / "agent_runtime").rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(), str(file))):
            if isinstance(node, ast.Import):
                found |= {alias.name.partition(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.partition(".")[0])
    return found


def test_every_image_dependency_is_imported_by_the_agent_runtime() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [
        re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower()
        for requirement in project["dependencies"]
    ]
    imported = _runtime_imports()
    unused = [name for name in names if MODULE_OF.get(name, name.replace("-", "_")) not in imported]
    assert not unused, f"the agent image installs packages agent_runtime never imports: {unused}"

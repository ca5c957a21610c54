"""Every connection to memory.db in one process goes through one SQLite library.

Where the host's Python cannot load extensions the store uses `pysqlite3`; a check opening the
same file with the standard library's sqlite3 would take locks that never conflict with the
store's (one process), believe it is alone, and on closing checkpoint and delete the WAL the
store is still writing to: what the store commits afterwards goes to a deleted file.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from agent_runtime.memory.store import MemoryStore

REPO = Path(__file__).resolve().parents[2]

# Saves a fact, runs the checks that open memory.db beside the open store, saves another,
# then ends without closing anything (as a killed agent would).
WRITER = """
import os, sys
from pathlib import Path
from agent_runtime.memory.store import MemoryStore
from agent_runtime.process.storage_check import fresh_store_of, memory_db_problem
from agent_runtime.jobs_due import maintenance_due
path = Path(sys.argv[1])
store = MemoryStore(path)
store.save("The ferry leaves at 7:15 from pier 3")
assert memory_db_problem(path) is None
assert fresh_store_of(path) is None
maintenance_due(path.parent)
store.save("The harbour office opens at nine")
os._exit(0)
"""


def test_a_check_beside_the_open_store_loses_none_of_its_later_writes(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    ran = subprocess.run(
        [sys.executable, "-c", WRITER, str(path)], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr
    store = MemoryStore(path)
    try:
        texts = sorted(fact.text for fact in store.list_facts())
    finally:
        store.close()
    assert texts == ["The ferry leaves at 7:15 from pier 3", "The harbour office opens at nine"]


def test_no_module_of_the_agent_runtime_opens_sqlite_with_another_library() -> None:
    opened_elsewhere = []
    for path in sorted((REPO / "agent_runtime").rglob("*.py")):
        if path.name == "sqlite_driver.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "connect"
                and isinstance(node.value, ast.Name)
                and node.value.id in {"sqlite3", "pysqlite3", "dbapi2"}
            ):
                opened_elsewhere.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert opened_elsewhere == []

"""An agent cannot take the name of another principal, nor take over the operator's token."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.config.reserved import RESERVED_AGENT_NAMES
from orchestrator.control.auth import OPERATOR, ReservedName, TokenStore
from orchestrator.state.db import Database
from orchestrator.state.migrations import migrate_state

OPERATOR_AGENT = """\
version: 1
fleet: demo
agents:
  alpha:
    role: first
  operator:
    role: pretends to be the operator
"""


def test_an_agent_named_operator_is_refused_by_validate_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(OPERATOR_AGENT))
    result = CliRunner().invoke(cli, ["validate", "-f", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:6: agents.operator: agent name 'operator' is reserved" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    "name", ["orchestrator", "scheduler", "fleet", "gateway", "api", "metrics", "dashboard"]
)
def test_names_of_principals_and_routes_are_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(textwrap.dedent(OPERATOR_AGENT).replace("  operator:", f"  {name}:"))
    result = CliRunner().invoke(cli, ["validate", "-f", str(path)])
    assert result.exit_code == 2
    assert f"agent name {name!r} is reserved" in result.output


def test_minting_an_agent_token_never_replaces_the_operators(tmp_path: Path) -> None:
    tokens = TokenStore(Database(tmp_path / "state.db"))
    operator_token = tokens.mint_operator()
    with pytest.raises(ReservedName):
        tokens.mint(OPERATOR)
    for name in RESERVED_AGENT_NAMES:
        with pytest.raises(ReservedName):
            tokens.mint(name)
    agent_token = tokens.mint("alpha")
    assert agent_token != operator_token
    operator = tokens.identify(operator_token)
    assert operator is not None and operator.is_operator
    agent = tokens.identify(agent_token)
    assert agent is not None and agent.name == "alpha" and not agent.is_operator


def test_an_agent_row_named_operator_is_still_an_agent(tmp_path: Path) -> None:
    """Even a name that got past validation lands in the agent namespace."""
    db = Database(tmp_path / "state.db")
    tokens = TokenStore(db)
    operator_token = tokens.mint_operator()
    tokens._store("agent", OPERATOR)
    found = tokens.identify(operator_token)
    assert found is not None and found.is_operator
    rows = db.query("SELECT kind, name FROM principal_tokens ORDER BY kind")
    assert [(row["kind"], row["name"]) for row in rows] == [("agent", "operator"), ("operator", "operator")]
    tokens.revoke(OPERATOR)
    assert tokens.identify(operator_token) == found


def test_tokens_of_the_single_namespace_table_are_migrated(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    legacy = sqlite3.connect(path)
    legacy.execute("CREATE TABLE tokens (principal TEXT PRIMARY KEY, digest TEXT NOT NULL)")
    for principal, token in (("operator", "op-token"), ("alpha", "alpha-token")):
        legacy.execute(
            "INSERT INTO tokens VALUES (?, ?)", (principal, hashlib.sha256(token.encode()).hexdigest())
        )
    legacy.commit()
    legacy.close()
    report = migrate_state(path, tmp_path / "backups")
    assert "tokens of the operator and of agents in separate namespaces" in report.applied
    tokens = TokenStore(Database(path))
    operator = tokens.identify("op-token")
    alpha = tokens.identify("alpha-token")
    assert operator is not None and operator.is_operator
    assert alpha is not None and alpha.name == "alpha" and not alpha.is_operator


def test_release_0_1_tokens_keep_working_after_the_migration(tmp_path: Path) -> None:
    release = Path(__file__).resolve().parents[2] / "fixtures" / "release-0.1.0" / "state" / "state.db"
    path = tmp_path / "state.db"
    shutil.copy(release, path)
    before = sqlite3.connect(path)
    rows = before.execute("SELECT principal, digest FROM tokens").fetchall()
    before.close()
    assert ("operator" in {name for name, _ in rows}) and len(rows) > 1
    migrate_state(path, tmp_path / "backups")
    db = Database(path)
    kinds = {(row["kind"], row["name"]) for row in db.query("SELECT kind, name FROM principal_tokens")}
    assert kinds == {("operator" if name == "operator" else "agent", name) for name, _ in rows}

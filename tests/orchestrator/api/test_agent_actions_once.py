"""Each agent action is written once, in `orchestrator.api.agent.actions`: the transports (the
link and the HTTP routes) reach the domain only through it, so no check of an action can be
written again, or forgotten, in one of them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "orchestrator" / "api" / "agent"
TRANSPORTS = ["link.py", "routes.py", "peers.py", "tools.py", "approvals.py"]
# Where an action's work and checks live: a transport importing one of these does an action's work.
DOMAIN_MODULES = {
    "orchestrator.running_agents.session",
    "orchestrator.api.fair_share",
    "orchestrator.api.limits",
    "orchestrator.api.forget_copies",
    "orchestrator.approvals",
    "orchestrator.broker",
    "orchestrator.host_tools",
}
# The services an action uses; a transport reading one of them does an action's work.
DOMAIN_SERVICES = {"broker", "inbox", "snapshots", "scheduler", "health", "fair_share"}


def _imported(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_transport_reaches_the_domain_only_through_the_actions(transport: str) -> None:
    tree = ast.parse((PACKAGE / transport).read_text())
    imported = {
        name
        for name in _imported(tree)
        if any(name == module or name.startswith(f"{module}.") for module in DOMAIN_MODULES)
    }
    assert not imported, f"{transport} imports {sorted(imported)}: call an action of actions.py instead"
    used = sorted(
        {
            f"services.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in DOMAIN_SERVICES
        }
    )
    assert not used, f"{transport} uses {used}: call an action of actions.py instead"


def test_every_transport_calls_the_actions() -> None:
    for transport in TRANSPORTS:
        assert "orchestrator.api.agent" in _imported(ast.parse((PACKAGE / transport).read_text()))

"""`flotilla validate` on secrets: each declared secret readable from its source, each handle
naming a declared secret, each agent's grant naming one, and the deprecated `${NAME}` form of
MCP headers pointed at its replacement."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.secrets import SecretStore

if TYPE_CHECKING:
    from orchestrator.config.fleet import LoadedFleet, Problems


def check_secrets(fleet: LoadedFleet, problems: Problems) -> None:
    declared = set(fleet.config.secrets)
    store = SecretStore(fleet.config.secrets, fleet.root)
    for name in sorted(declared):
        problem = store.problem(name)
        if problem is not None:
            problems.add(("secrets", name), problem)
    for agent_name, agent in fleet.config.agents.items():
        where = ("agents", agent_name, "tools")
        if agent.tools.http is not None:
            for index, name in enumerate(agent.tools.http.secrets):
                if name not in declared:
                    problems.add((*where, "http", "secrets", index), _undeclared(name, declared))
        for index, server in enumerate(agent.tools.mcp):
            for header, names in server.header_secrets().items():
                for name in names:
                    if name not in declared:
                        problems.add((*where, "mcp", index, "headers", header), _undeclared(name, declared))
            for header, variables in server.header_variables().items():
                for variable in variables:
                    problems.warn(
                        (*where, "mcp", index, "headers", header),
                        f"${{{variable}}} is deprecated: declare the value once under secrets: "
                        f"({variable.lower()}: {{env: {variable}}}) and write {{{{secret:{variable.lower()}}}}}",
                    )


def _undeclared(name: str, declared: set[str]) -> str:
    known = ", ".join(sorted(declared)) or "none"
    return f"secret {name!r} is not declared under secrets: (declared: {known})"

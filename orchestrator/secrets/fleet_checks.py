"""`flotilla validate` on secrets: each declared secret readable from its source and bound to
hosts, each handle naming a declared secret, each agent's grant naming one, and the deprecated
`${NAME}` form of MCP headers pointed at its replacement."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.secrets import SecretStore
from orchestrator.secrets.uses import secret_uses

if TYPE_CHECKING:
    from orchestrator.config.fleet import LoadedFleet, Problems


def check_secrets(fleet: LoadedFleet, problems: Problems, *, values_needed: bool = True) -> None:
    """A value that cannot be read is a problem where an agent uses it (starting that agent
    needs it), else a warning; `values_needed=False`: only ever a warning."""
    declared = set(fleet.config.secrets)
    _check_values(fleet, problems, values_needed)
    _warn_unbound(fleet, problems)
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


def _check_values(fleet: LoadedFleet, problems: Problems, values_needed: bool) -> None:
    store = SecretStore(fleet.config.secrets, fleet.root)
    uses = secret_uses(fleet.config)
    for name in sorted(fleet.config.secrets):
        problem = store.problem(name)
        if problem is None:
            continue
        users = [use for use in uses if use.secret == name]
        if not values_needed or not users:
            unused = "" if users else "; no agent uses it, so starting the fleet does not need it"
            problems.warn(("secrets", name), problem + unused)
            continue
        for use in users:
            problems.add(use.path, f"agent {use.agent!r} needs {problem}")


def _warn_unbound(fleet: LoadedFleet, problems: Problems) -> None:
    """A secret an agent may send, declared without the hosts it is for."""
    for name in sorted(_granted_to_agents(fleet)):
        source = fleet.config.secrets.get(name)
        if source is not None and source.hosts is None:
            problems.warn(
                ("secrets", name),
                f"secret {name!r} names no hosts: any URL an agent may request can receive it. Add "
                "hosts: [api.example.com] (the hosts it is for); a secret without hosts is refused "
                "from the next release on",
            )


def _granted_to_agents(fleet: LoadedFleet) -> set[str]:
    """The secrets some agent may put into its own HTTP requests."""
    return {
        name
        for agent in fleet.config.agents.values()
        if agent.tools.http is not None
        for name in agent.tools.http.secrets
    }


def _undeclared(name: str, declared: set[str]) -> str:
    known = ", ".join(sorted(declared)) or "none"
    return f"secret {name!r} is not declared under secrets: (declared: {known})"

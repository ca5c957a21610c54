"""Each agent's effective settings, by what a change to them takes to reach the agent.

- `recreate`: a new container (its limits, and what its memory store opens with at start);
- `reload`:   the config the agent is served; it fetches it again when its hash changes;
- `live`:     read by the orchestrator's gateway and scheduler on each use;
- `seed`:     the text a workspace file was seeded from;
- `generated`: the read-only workspace files the orchestrator writes (AGENTS.md, SYSTEM.md...).

The container's label carries `container_hash`, the agent's check-ins carry `runtime_hash`:
nothing about another agent is in either, so adding or removing agent B never touches agent A's
container (A's AGENTS.md, which lists B, is rewritten in place).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agent_runtime.protocol import DEFAULT_SHARED_WRITERS
from orchestrator.config.windows import window_for
from orchestrator.config.workspace_texts import render_agents_md, render_system_md

if TYPE_CHECKING:
    from orchestrator.config.fleet import LoadedFleet
    from orchestrator.config.tools import ToolsConfig

Effect = Literal["recreate", "reload", "live", "seed", "generated"]
EFFECT_NOTES: dict[Effect, str] = {
    "recreate": "new container",
    "reload": "the agent reloads its config",
    "live": "in force at once",
    "seed": "workspace seed",
    "generated": "rewritten in place",
}
Settings = dict[str, tuple[Effect, Any]]


@dataclass(frozen=True)
class FieldChange:
    field: str
    effect: Effect

    def __str__(self) -> str:
        return self.field


def _flat(prefix: str, effect: Effect, values: dict[str, Any]) -> Settings:
    found: Settings = {}
    for key, value in values.items():
        name = f"{prefix}.{key}"
        if isinstance(value, dict):
            found.update(_flat(name, effect, value))
        else:
            found[name] = (effect, value)
    return found


def agent_settings(fleet: LoadedFleet, agent: str) -> Settings:
    """Every setting that reaches `agent`, by field path, with what a change to it takes."""
    key = f"settings:{agent}"
    if key not in fleet.memo:
        fleet.memo[key] = _agent_settings(fleet, agent)
    found: Settings = fleet.memo[key]
    return found


def _agent_settings(fleet: LoadedFleet, agent: str) -> Settings:
    config = fleet.config
    own = config.agents[agent]
    model = config.model_of(agent)
    settings: Settings = _flat("resources", "recreate", config.resources_of(agent).model_dump(mode="json"))
    # The agent's memory store is opened with these when its worker starts.
    settings["llm.embedding.model"] = ("recreate", config.llm.embedding.model)
    settings["llm.embedding.dimensions"] = ("recreate", config.llm.embedding.dimensions)
    settings |= {
        "role": ("reload", own.role),
        "model": ("reload", model),
        "heartbeat_model": ("reload", config.heartbeat_model_of(agent)),
        "context_window": ("reload", config.context_window_of(agent, window_for(model))),
        "talks_to": ("reload", list(own.talks_to)),
        "models": ("live", config.allowed_models(agent)),
        "hibernate_after": ("live", config.hibernate_after_of(agent)),
        "always_on": ("live", config.always_on_of(agent)),
    }
    settings |= _tool_settings(own.tools)
    if own.channels:
        # The `notify` tool and the channels in its schema are listed when the agent's worker starts.
        settings["channels"] = ("recreate", list(own.channels))
    if tuple(own.memory_shared_writers) != DEFAULT_SHARED_WRITERS:
        # The memory tools learn who may write the shared scope when the agent's worker starts.
        settings["memory_shared_writers"] = ("recreate", list(own.memory_shared_writers))
    # The strategy is chosen when the agent's worker starts.
    settings |= _flat("context", "recreate", config.context_of(agent).model_dump(mode="json"))
    settings |= _flat("budget", "live", config.budget_of(agent).model_dump(mode="json"))
    heartbeat = config.heartbeat_of(agent)
    if heartbeat is not None:
        settings |= _flat("heartbeat", "live", heartbeat.model_dump(mode="json", exclude={"rules"}))
    for used in config.allowed_models(agent):
        provider = used.split(":", 1)[0] if ":" in used else None
        if provider in config.llm.providers:
            dumped = config.llm.providers[provider].model_dump(mode="json")
            settings |= _flat(f"llm.providers.{provider}", "live", dumped)
        if used in config.llm.models:
            settings |= _flat(f"llm.models.{used}", "live", config.llm.models[used].model_dump(mode="json"))
    settings |= {
        "soul": ("seed", own.soul),
        "instructions": ("seed", own.instructions),
        "user": ("seed", own.user),
        "interface": ("seed", fleet.interfaces.get(agent, "")),
        "heartbeat.rules": ("seed", list(heartbeat.rules) if heartbeat else []),
        "AGENTS.md": ("generated", render_agents_md(fleet, agent)),
        "SYSTEM.md": ("generated", render_system_md(fleet, agent)),
        "PROJECT.md": ("generated", fleet.project_md),
    }
    return settings


def _tool_settings(tools: ToolsConfig) -> Settings:
    """MCP servers start with the agent's worker (a new unit); approval rules are re-read on reload.

    Named only when set, so that a fleet without tools keeps the hashes it had.
    """
    found: Settings = {}
    if tools.mcp:
        found["tools.mcp"] = (
            "recreate",
            [
                server.model_dump(mode="json") if server.is_http else server.stdio_dump()
                for server in tools.mcp
            ],
        )
    if tools.http is not None:
        # The agent lists its tools when its worker starts; the policy itself is read at each call.
        found["tools.http"] = ("recreate", True)
    if tools.exec is not None:
        # The tool is offered when the agent's worker starts; its caps are read on each call.
        found["tools.exec"] = ("recreate", True)
        found |= _flat("tools.exec", "live", tools.exec.model_dump(mode="json"))
    if tools.browser is not None:
        # Offered when the worker starts; caps are read when a session opens.
        found["tools.browser"] = ("recreate", True)
        found |= _flat("tools.browser", "live", tools.browser.model_dump(mode="json"))
    if tools.search is not None:
        found["tools.search"] = ("recreate", True)
    if tools.rules or "approval_timeout" in tools.model_fields_set or tools.http is not None:
        found["tools.approval"] = ("reload", [tools.approval_required(), tools.approval_timeout])
    return found


def _digest(settings: Settings, effects: set[Effect]) -> str:
    doc = {name: value for name, (effect, value) in settings.items() if effect in effects}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


def container_hash(fleet: LoadedFleet, agent: str) -> str:
    return _digest(agent_settings(fleet, agent), {"recreate"})


def runtime_hash(fleet: LoadedFleet, agent: str) -> str:
    return _digest(agent_settings(fleet, agent), {"recreate", "reload"})


def changes(before: LoadedFleet, after: LoadedFleet, agent: str) -> list[FieldChange]:
    """The settings of `agent` that differ between two versions of the fleet, in a stable order."""
    old = agent_settings(before, agent)
    new = agent_settings(after, agent)
    found = []
    for name in sorted(old.keys() | new.keys()):
        if old.get(name, (None, None))[1] != new.get(name, (None, None))[1]:
            effect = (new.get(name) or old[name])[0]
            found.append(FieldChange(name, effect))
    return found


# Sections of fleet.yaml that reach agents through their own settings (`agent_settings`), or that
# an apply does not change (the name, the format's version, the runtime `up` chose).
_NOT_FLEET_WIDE = frozenset({"version", "fleet", "runtime", "defaults", "llm", "agents", "budget"})


def fleet_changes(before: LoadedFleet, after: LoadedFleet) -> list[str]:
    """Fleet-wide settings that changed and belong to no single agent: the fleet's own budget, by
    key, and whole sections such as `alerts`, `limits` or `secrets`. All are read where they are
    used, so they are in force as soon as the fleet is."""
    old, new = before.config.budget.model_dump(mode="json"), after.config.budget.model_dump(mode="json")
    found = [f"budget.{key}" for key in sorted(old) if old[key] != new.get(key)]
    for section in sorted(set(type(after.config).model_fields) - _NOT_FLEET_WIDE):
        if before.config.model_dump(mode="json", include={section}) != after.config.model_dump(
            mode="json", include={section}
        ):
            found.append(section)
    return found

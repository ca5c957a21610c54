"""Which declared secrets each agent uses, and where fleet.yaml says so.

Starting an agent needs the values of its own secrets only: those its tools send (HTTP grants,
MCP and web-search headers), those of the hooks that deliver to it and of the channels it
notifies or is reached through. A secret no agent uses is the orchestrator's own business
(an alert channel, say) and is read when it is first needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.config.channels import ChatChannelBase
from orchestrator.config.models import AgentConfig, FleetConfig
from orchestrator.config.safe_yaml import FieldPath


@dataclass(frozen=True)
class SecretUse:
    """`agent` uses `secret`; `path` is where fleet.yaml says so."""

    agent: str
    secret: str
    path: FieldPath


def secret_uses(config: FleetConfig) -> list[SecretUse]:
    """Every use of a secret by an agent, in fleet.yaml's order."""
    uses: list[SecretUse] = []
    for name, agent in config.agents.items():
        uses += _tool_uses(name, agent)
        uses += _channel_uses(config, name, agent)
    for hook_name, hook in config.hooks.items():
        if hook.agent in config.agents:
            uses.append(SecretUse(hook.agent, hook.secret, ("hooks", hook_name, "secret")))
    return uses


def _tool_uses(name: str, agent: AgentConfig) -> list[SecretUse]:
    where: FieldPath = ("agents", name, "tools")
    tools = agent.tools
    uses: list[SecretUse] = []
    if tools.http is not None:
        for index, secret in enumerate(tools.http.secrets):
            uses.append(SecretUse(name, secret, (*where, "http", "secrets", index)))
    for index, server in enumerate(tools.mcp):
        for header, secrets in server.header_secrets().items():
            uses += [SecretUse(name, secret, (*where, "mcp", index, "headers", header)) for secret in secrets]
    if tools.search is not None:
        uses += [SecretUse(name, secret, (*where, "search", "headers")) for secret in tools.search.secrets()]
    return uses


def _channel_uses(config: FleetConfig, name: str, agent: AgentConfig) -> list[SecretUse]:
    """The channels the agent notifies, and the chat channels people reach it through."""
    uses: list[SecretUse] = []
    for channel_name, channel in config.channels.items():
        reached = isinstance(channel, ChatChannelBase) and name in channel.agents
        if channel_name in agent.channels or reached:
            uses += [SecretUse(name, secret, ("channels", channel_name)) for secret in channel.handles()]
    return uses

"""References from the fleet's edge (`channels:`, `hooks:`, `agents.X.channels`) to the rest of
fleet.yaml: each problem with the field it is in, so that `validate` names its line and the
other checks still run."""

from __future__ import annotations

from orchestrator.config.channels import ChatChannelBase
from orchestrator.config.models import FleetConfig
from orchestrator.config.safe_yaml import FieldPath


def edge_problems(config: FleetConfig) -> list[tuple[FieldPath, str]]:
    found: list[tuple[FieldPath, str]] = []
    for name, agent in config.agents.items():
        for index, channel in enumerate(agent.channels):
            if channel not in config.channels:
                known = ", ".join(sorted(config.channels)) or "none declared"
                found.append(
                    (("agents", name, "channels", index), f"unknown channel {channel!r} (channels: {known})")
                )
            elif isinstance(config.channels[channel], ChatChannelBase):
                found.append(
                    (
                        ("agents", name, "channels", index),
                        f"channel {channel!r} is a chat channel: people reach the agent through it "
                        f"(channels.{channel}.agents), it is no notify target",
                    )
                )
    for name, settings in config.channels.items():
        for secret in settings.handles():
            if secret not in config.secrets:
                found.append(
                    (
                        ("channels", name),
                        f"{{{{secret:{secret}}}}} names a secret not declared under secrets:",
                    )
                )
        found += _chat_problems(config, name, settings)
    for name, hook in config.hooks.items():
        if hook.agent not in config.agents:
            found.append((("hooks", name, "agent"), f"unknown agent {hook.agent!r}"))
        if hook.secret not in config.secrets:
            found.append(
                (("hooks", name, "secret"), f"secret {hook.secret!r} is not declared under secrets:")
            )
    return found


def _chat_problems(config: FleetConfig, name: str, settings: object) -> list[tuple[FieldPath, str]]:
    """A chat channel reaches only agents of the fleet."""
    if not isinstance(settings, ChatChannelBase):
        return []
    return [
        (("channels", name, "agents", index), f"unknown agent {reached!r}")
        for index, reached in enumerate(settings.agents)
        if reached not in config.agents
    ]

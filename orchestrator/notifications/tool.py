"""The `notify` tool: an agent sends a text to one of the channels fleet.yaml lists for it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agent_runtime.protocol import (
    OrchestratorTool,
    OrchestratorToolCall,
    OrchestratorToolResult,
    OrchestratorTools,
)
from orchestrator.host_tools import HostToolRefused
from orchestrator.notifications.notifier import NotificationRefused, Notifier

NOTIFY = "notify"


class NotifyArguments(BaseModel):
    channel: str = Field(min_length=1, max_length=64)
    text: str = Field(min_length=1)


class NotifyTools:
    """The host tool provider of one agent's `notify` (orchestrator.host_tools)."""

    def __init__(
        self, agent: str, notifier: Notifier, charge_refusal: Callable[[], None] | None = None
    ) -> None:
        """`charge_refusal` charges a refused call to the agent's rates (RateLimited past them)."""
        self._agent = agent
        self._notifier = notifier
        self._charge_refusal = charge_refusal

    def owns(self, name: str) -> bool:
        return name == NOTIFY

    async def list(self) -> OrchestratorTools:
        channels = self._notifier.allowed(self._agent)
        if not channels:
            return OrchestratorTools()
        return OrchestratorTools(tools=[notify_tool(channels)])

    async def call(self, request: OrchestratorToolCall) -> OrchestratorToolResult:
        try:
            arguments = NotifyArguments.model_validate(request.arguments)
        except ValidationError as bad:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in bad.errors())
            return OrchestratorToolResult(ok=False, output=f"invalid arguments: {problems}")
        try:
            record = await self._notifier.notify(
                self._agent, arguments.channel, arguments.text, "tool", request.item_id
            )
        except NotificationRefused as refused:
            if self._charge_refusal is not None:
                self._charge_refusal()
            raise HostToolRefused(str(refused)) from None
        if record.status == "sent":
            return OrchestratorToolResult(
                ok=True, output=f"sent to {record.channel} (notification {record.id})"
            )
        if record.status in ("retrying", "sending"):
            why = f": {record.last_error}" if record.last_error else ""
            return OrchestratorToolResult(
                ok=True,
                output=f"not delivered yet{why}; the orchestrator retries "
                f"(notification {record.id}), do not send it again",
            )
        return OrchestratorToolResult(ok=False, output=f"not delivered: {record.last_error}")


def notify_tool(channels: list[str]) -> OrchestratorTool:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "channel": {"type": "string", "enum": channels, "description": "Where to send it"},
            "text": {"type": "string", "description": "The message, plain text"},
        },
        "required": ["channel", "text"],
        "additionalProperties": False,
    }
    return OrchestratorTool(
        name=NOTIFY,
        server="channels",
        kind="host",
        description="Send a short message to people through a channel (webhook, email, chat). "
        f"Channels you may use: {', '.join(channels)}.",
        input_schema=schema,
    )

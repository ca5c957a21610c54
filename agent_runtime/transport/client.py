"""The agent's one client for the orchestrator (see `agent_runtime.protocol`).

Part of the idle path: it imports only the standard library, pydantic, websockets and the wire
models. A new process's first config and check-in are this client's standard-library part
(`agent_runtime.transport.base_client`, used by `agent_runtime.transport.boot`). Everything an
agent does all the time (config, check-ins, the inbox long-poll, acknowledgements, progress) goes
over the channel (`agent_runtime.transport.channel`); the rest are plain HTTP requests
(`agent_runtime.transport.http`) on the same kept-alive connections, loaded with the first of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ValidationError

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    AgentEvent,
    AgentRuntimeConfig,
    ChannelCheckIn,
    ChannelConfig,
    ChannelDone,
    ChannelForgotten,
    ChannelNext,
    ChannelProgress,
    ChannelWorkspaceWrite,
    CheckIn,
    CheckInReply,
    ForgottenCopies,
    InboxItem,
    RunRecord,
    TokenCountRequest,
    TokenCountResult,
    WorkResult,
    WorkspaceWrite,
    WorkspaceWriteResult,
)
from agent_runtime.transport.base_client import BaseClient
from agent_runtime.transport.channel import MAX_FRAME_BYTES, AgentChannel
from agent_runtime.transport.errors import OrchestratorError

if TYPE_CHECKING:
    from agent_runtime.transport.http import AgentHttp

Model = TypeVar("Model", bound=BaseModel)
REQUEST_TIMEOUT_S = 30.0
LONG_POLL_MARGIN_S = 15.0


class OrchestratorClient(BaseClient):
    """Calls the agent routes with the agent's bearer token, re-read from disk on a 401."""

    def __init__(self, base_url: str, token_file: Path) -> None:
        super().__init__(base_url, token_file)
        self.reread_token()  # there from the start: written before the agent starts
        self._http: AgentHttp | None = None
        self.channel = AgentChannel(self.base_url, lambda: self.token, refresh_token=self.reread_token)

    def close(self) -> None:
        self.channel.close()
        super().close()

    @property
    def http(self) -> AgentHttp:
        if self._http is None:
            from agent_runtime.transport.http import AgentHttp

            self._http = AgentHttp(self.base_url, lambda: self.token, self.reread_token, self.plain_http)
        return self._http

    def use_limits(self, config: AgentRuntimeConfig) -> None:
        """Send no frame the orchestrator would refuse by closing the channel."""
        self.channel.max_frame_bytes = min(MAX_FRAME_BYTES, config.max_frame_bytes)

    def get_config(self, reload: bool = False) -> AgentRuntimeConfig:
        """`reload`: this process already runs; the orchestrator must not take it for a new one."""
        frame = ChannelConfig(reload=reload)
        return _validate(self.channel.call(frame, REQUEST_TIMEOUT_S).body, AgentRuntimeConfig)

    def checkin(self, body: CheckIn) -> CheckInReply:
        return _validate(
            self.channel.call(ChannelCheckIn(checkin=body), REQUEST_TIMEOUT_S).body, CheckInReply
        )

    def next_item(self, wait_s: float) -> InboxItem | None:
        reply = self.channel.call(ChannelNext(wait_s=wait_s), wait_s + LONG_POLL_MARGIN_S)
        return None if reply.status == 204 else _validate(reply.body, InboxItem)

    def progress(self, item_id: str, delta: str) -> None:
        self.channel.call(ChannelProgress(item_id=item_id, delta=delta), REQUEST_TIMEOUT_S)

    def done(self, item_id: str, result: WorkResult) -> None:
        self.channel.call(ChannelDone(item_id=item_id, result=result), REQUEST_TIMEOUT_S)

    def write_workspace(self, name: str, write: WorkspaceWrite) -> WorkspaceWriteResult:
        """A workspace write, accepted (capped, versioned) by the orchestrator's copy or refused."""
        reply = self.channel.call(ChannelWorkspaceWrite(name=name, write=write), REQUEST_TIMEOUT_S)
        return _validate(reply.body, WorkspaceWriteResult)

    def forgotten(self, texts: list[str]) -> ForgottenCopies:
        """The model forgot these facts: the orchestrator rewrites its copies of them."""
        reply = self.channel.call(ChannelForgotten(texts=texts), REQUEST_TIMEOUT_S)
        return _validate(reply.body, ForgottenCopies)

    def record_run(self, run: RunRecord) -> None:
        self.http.send("POST", f"{AGENT_API_PREFIX}/runs", run)

    def event(self, event: AgentEvent) -> None:
        self.http.send("POST", f"{AGENT_API_PREFIX}/events", event)

    def count_tokens(self, model: str, texts: list[str]) -> TokenCountResult:
        request = TokenCountRequest(model=model, texts=texts)
        return self.http.call("POST", "/v1/tokens/count", request, TokenCountResult)


def _validate(body: object, model: type[Model]) -> Model:
    try:
        return model.model_validate(body)
    except ValidationError as bad:
        raise OrchestratorError(f"channel: unexpected reply: {bad}") from None

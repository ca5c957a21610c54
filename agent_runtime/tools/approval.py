"""Tool calls that wait for an operator's approval (fleet.yaml `tools.rules`, `approval: required`).

Before such a call runs, the agent asks the orchestrator for an approval item and waits on it
with long-polls until the operator approves or denies it, or its timeout denies it. The item's
idempotency key is derived from the inbox item and the call itself, so an agent that lost the
orchestrator (a restart) or was restarted itself waits on the same item when it asks again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    ApprovalItem,
    ApprovalRequest,
    ToolSettings,
    approval_key,
    needs_approval,
)
from agent_runtime.tools.registry import Verdict
from agent_runtime.transport.errors import OrchestratorError
from agent_runtime.transport.http import AgentHttp

log = logging.getLogger(__name__)

WAIT_S = 25.0
RETRY_S = 1.0
# The orchestrator expires the item; the agent gives up on its own only this long after that.
DEADLINE_MARGIN_S = 60.0


class ApprovalUnavailable(Exception):
    """The orchestrator could not be asked; the call is not run."""


class ApprovalClient:
    """The agent's approval routes, over the agent's authorized client."""

    def __init__(self, http: AgentHttp) -> None:
        self._http = http

    def request(self, body: ApprovalRequest) -> ApprovalItem:
        return self._call("POST", "/approvals", body)

    def wait(self, approval_id: str, wait_s: float) -> ApprovalItem:
        return self._call("GET", f"/approvals/{approval_id}?wait={wait_s:g}", None)

    def _call(self, method: str, path: str, body: ApprovalRequest | None) -> ApprovalItem:
        try:
            return self._http.call(
                method, f"{AGENT_API_PREFIX}{path}", body, ApprovalItem, timeout_s=WAIT_S + 15.0
            )
        except OrchestratorError as failed:
            raise ApprovalUnavailable(str(failed)) from None


class ApprovalGate:
    """The registry's gate: asks for approval when the agent's settings say so, then waits."""

    def __init__(
        self,
        client: ApprovalClient,
        settings: Callable[[], ToolSettings],
        item_id: Callable[[], str | None],
        run_id: Callable[[], str | None],
        on_wait: Callable[[ApprovalItem], object] | None = None,
    ) -> None:
        self._client = client
        self._settings = settings
        self._item_id = item_id
        self._run_id = run_id
        self._on_wait = on_wait

    def __call__(self, tool: str, arguments: dict[str, Any]) -> Verdict | None:
        settings = self._settings()
        asked_as = needs_approval(settings.approval_required, tool, arguments)
        if asked_as is None:
            return None
        request = ApprovalRequest(
            key=approval_key(self._item_id(), tool, arguments),
            tool=asked_as,
            arguments=arguments,
            item_id=self._item_id(),
            run_id=self._run_id(),
            timeout_s=settings.approval_timeout_s,
        )
        deadline = time.monotonic() + settings.approval_timeout_s + DEADLINE_MARGIN_S
        item = self._until_decided(request, deadline)
        if item is None:
            return Verdict("expired", "-", "the orchestrator could not be reached to ask for approval")
        if item.state == "pending":
            return Verdict("expired", item.id, "no decision before the agent's own deadline")
        return Verdict(item.state, item.id, item.reason)

    def _until_decided(self, request: ApprovalRequest, deadline: float) -> ApprovalItem | None:
        item: ApprovalItem | None = None
        announced = False
        while time.monotonic() < deadline:
            try:
                # Asking again with the same key is how a wait survives an orchestrator restart.
                item = self._client.request(request) if item is None else self._client.wait(item.id, WAIT_S)
            except ApprovalUnavailable as failed:
                log.warning("approval for %s: %s; asking again", request.tool, failed)
                item = None
                time.sleep(RETRY_S)
                continue
            if item.state != "pending":
                return item
            if not announced and self._on_wait is not None:
                announced = True
                self._on_wait(item)
        return item

"""The orchestrator's own check of an agent's approval rules, on the frame or request that carries
the action: a workspace write (`update_workspace`), a tell (`tell_agent`), an ask (`ask_agent`,
`PEER.OPERATION`), or a call of a tool the orchestrator runs for the agent (an HTTP MCP
server's tool, a host tool).

The agent's own gate asks for the approval item and waits on it; this check does not trust that
it did. An action passes only when an approved item of the same agent names it: the same tool,
the same arguments as the action carries. Each approved item carries one action (recorded in
the store's `approval_uses`): the same action sent again (a retry of a lost reply: the same
message key, the same write) passes again, a different one needs an approval of its own. A
tool call is named by its idempotency key (the inbox item, the tool, its arguments), as the
agent's gate derives it, so the same call made again for the same item is the same action.

Imports the approval store and wire models; nothing of the API.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from typing import Any

from agent_runtime import UnknownFile, normalize_name
from agent_runtime.protocol import ApprovalItem, AskRequest, TellRequest, approval_key, needs_approval
from orchestrator.approvals.store import ApprovalStore
from orchestrator.errors import Forbidden

WORKSPACE_TOOL = "update_workspace"
TELL_TOOL = "tell_agent"
ASK_TOOL = "ask_agent"

Matches = Callable[[ApprovalItem], bool]


class ApprovalRules:
    """One agent's approval rules (ToolsConfig.approval_required), enforced on its actions."""

    def __init__(self, agent: str, required: list[str], store: ApprovalStore) -> None:
        self._agent = agent
        self._required = required
        self._store = store

    def check_tool_call(self, name: str, arguments: dict[str, Any], item_id: str | None) -> None:
        """A call of a tool the orchestrator runs for the agent, made for inbox item `item_id`."""
        asked_as = needs_approval(self._required, name, arguments)
        if asked_as is None:
            return
        item = self._store.find(self._agent, approval_key(item_id, name, arguments))
        if item is None or item.state != "approved" or item.tool != asked_as:
            state = item.state if item is not None else "not asked for"
            raise self._refused(
                asked_as, f"{name} needs an operator's approval for this call (approval: {state})"
            )

    def check_workspace_write(self, name: str, content: str, current: str) -> None:
        """`name` is the canonical file name, `current` the operator copy's text before the write."""
        if needs_approval(self._required, WORKSPACE_TOOL, {}) is None:
            return

        def matches(item: ApprovalItem) -> bool:
            args = item.arguments
            approved = args.get("content")
            if _file(args.get("name")) != name or not isinstance(approved, str):
                return False
            if args.get("mode") == "append":
                separator = "" if not current or current.endswith("\n") else "\n"
                return content == current + separator + approved
            return content == approved

        fingerprint = _digest("write", name, content)
        self._require(WORKSPACE_TOOL, matches, fingerprint, f"this write of {name}")

    def check_tell(self, request: TellRequest) -> None:
        if needs_approval(self._required, TELL_TOOL, {}) is None:
            return

        def matches(item: ApprovalItem) -> bool:
            args = item.arguments
            return (
                args.get("agent") == request.to
                and args.get("text") == request.text
                and item.item_id == request.parent_item
            )

        self._require(TELL_TOOL, matches, _message_print(request.idempotency_key), f"a tell to {request.to}")

    def check_ask(self, request: AskRequest) -> None:
        call = {"agent": request.to, "operation": request.operation}
        asked_as = needs_approval(self._required, ASK_TOOL, call)
        if asked_as is None:
            return

        def matches(item: ApprovalItem) -> bool:
            args = item.arguments
            return (
                args.get("agent") == request.to
                and args.get("operation") == request.operation
                and (args.get("input") or {}) == request.input
                and item.item_id == request.parent_item
            )

        what = f"an ask of {request.to}.{request.operation}"
        self._require(asked_as, matches, _message_print(request.idempotency_key), what)

    def _require(self, tool: str, matches: Matches, fingerprint: str, what: str) -> None:
        candidates = [item for item in self._store.approved(self._agent, tool) if matches(item)]
        uses = self._store.uses([item.id for item in candidates])
        # A retry of an action already carried by an item passes on that item.
        if any(uses.get(item.id) == fingerprint for item in candidates):
            return
        for item in candidates:
            if item.id not in uses and self._store.claim(item, fingerprint):
                return
        state = "each matching approved item was used" if candidates else "no approved item matches it"
        raise self._refused(
            tool, f"agent {self._agent}: {what} needs an operator's approval ({tool}): {state}"
        )

    def _refused(self, tool: str, reason: str) -> Forbidden:
        """The refusal, published as an `approval.refused` event: an agent that acts without its
        approval is worth the operator's notice."""
        self._store.refused(self._agent, tool, reason)
        return Forbidden("approval_required", reason)


def _file(name: Any) -> str | None:
    """The canonical workspace file an argument names (SOUL, soul.md -> SOUL.md), or None."""
    try:
        return normalize_name(str(name or ""))
    except UnknownFile:
        return None


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _message_print(idempotency_key: str | None) -> str:
    """The broker takes a message key once, so a resend under it is the same message; without
    a key each send is a new one."""
    if idempotency_key is None:
        return f"unkeyed-{secrets.token_hex(8)}"
    return _digest("message", idempotency_key)

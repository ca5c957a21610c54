"""Tools to work with peer agents through the orchestrator's broker.

`list_peers`, `read_interface`, `ask_agent` and `tell_agent` call the broker's agent routes.
Every message carries the inbox item being worked on (`parent_item`), which is how the broker
counts hops and spots cycles. Each ask and tell also carries an idempotency key derived from
that item and the request itself: when this agent crashes mid-item and the item is redelivered,
repeating the same ask finds the answer already given instead of making the peer work twice.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent_runtime.protocol import (
    AGENT_API_PREFIX,
    AskRequest,
    AskResult,
    BrokerError,
    ChannelAsk,
    ChannelTell,
    OperationSpec,
    PeerInfo,
    TellRequest,
    TellResult,
)
from agent_runtime.tools.registry import Tool, ToolError
from agent_runtime.transport.channel import AgentChannel
from agent_runtime.transport.errors import OrchestratorError
from agent_runtime.transport.httpclient import HttpClient, HttpError, Response, http_client

CurrentItem = Callable[[], str | None]
Model = TypeVar("Model", bound=BaseModel)
TokenSource = str | Callable[[], str]
DEFAULT_ASK_TIMEOUT_S = 120.0
MAX_ASK_TIMEOUT_S = 600.0
HTTP_MARGIN_S = 15.0


class PeerClient:
    """The broker's agent routes over HTTP, with this agent's bearer token."""

    def __init__(
        self,
        base_url: str,
        token: TokenSource,
        *,
        timeout_s: float = 30.0,
        http: HttpClient | None = None,
        channel: AgentChannel | None = None,
    ) -> None:
        """Asks and tells travel on `channel` (the agent's own, shared) or on one of this client's."""
        self._token = token
        self._timeout_s = timeout_s
        self._http = http or http_client(base_url, timeout_s)
        self._own_channel = channel is None
        self._channel = channel or AgentChannel(base_url, self._current_token)

    def close(self) -> None:
        if self._own_channel:
            self._channel.close()
        self._http.close()

    def _current_token(self) -> str:
        return self._token() if callable(self._token) else self._token

    def peers(self) -> list[PeerInfo]:
        response = self._request("GET", "/peers")
        try:
            return [PeerInfo.model_validate(raw) for raw in response.json()]
        except (ValueError, ValidationError) as bad:
            raise ToolError(f"unexpected peer list from the orchestrator: {bad}") from None

    def ask(self, request: AskRequest) -> AskResult:
        return self._over_channel(ChannelAsk(request=request), AskResult, request.timeout_s + HTTP_MARGIN_S)

    def tell(self, request: TellRequest) -> TellResult:
        return self._over_channel(ChannelTell(request=request), TellResult, self._timeout_s)

    def _over_channel(self, frame: ChannelAsk | ChannelTell, model: type[Model], timeout_s: float) -> Model:
        try:
            reply = self._channel.call(frame, timeout_s)
        except OrchestratorError as failed:
            raise ToolError(f"the orchestrator did not take the {frame.type} request: {failed}") from None
        try:
            return model.model_validate(reply.body)
        except ValidationError as bad:
            raise ToolError(f"unexpected reply from the orchestrator: {bad}") from None

    def _request(
        self, method: str, path: str, body: BaseModel | None = None, timeout_s: float | None = None
    ) -> Response:
        token = self._current_token()
        try:
            response = self._http.send(
                method,
                f"{AGENT_API_PREFIX}{path}",
                content=body.model_dump_json().encode() if body is not None else None,
                headers={"authorization": f"Bearer {token}", "content-type": "application/json"},
                timeout_s=timeout_s or self._timeout_s,
            )
        except HttpError as failed:
            raise ToolError(f"the orchestrator did not answer {method} {path}: {failed}") from None
        if response.is_success:
            return response
        raise ToolError(f"the orchestrator refused {method} {path}: {_error_text(response)}")


def _error_text(response: Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}"
    details = "; ".join(str(d) for d in body.get("details") or [])
    text = f"{body.get('message', '')} (HTTP {response.status_code})"
    return f"{text}: {details}" if details else text


# --- describing peers to a model -----------------------------------------------------------


def describe_operation(peer: str, op: OperationSpec) -> str:
    """One line per operation: `peer.name(field: type, ...)` and its description."""
    properties = op.input_schema.get("properties") or {}
    required = set(op.input_schema.get("required") or [])
    fields = ", ".join(
        f"{name}{'' if name in required else '?'}: {_type_of(spec)}" for name, spec in properties.items()
    )
    line = f"`{peer}.{op.name}({fields})`"
    return f"{line}: {op.description}" if op.description else line


def _type_of(spec: Any) -> str:
    kind = spec.get("type", "any") if isinstance(spec, dict) else "any"
    return "|".join(str(k) for k in kind) if isinstance(kind, list) else str(kind)


def describe_peers(peers: list[PeerInfo]) -> str:
    """Markdown listing peers and their operations (for AGENTS.md and tool descriptions)."""
    if not peers:
        return "You have no peers: you may not ask or tell any other agent."
    lines = []
    for peer in peers:
        role = f" ({peer.role})" if peer.role else ""
        lines.append(f"- **{peer.name}**{role}")
        if not peer.operations:
            lines.append("  - no operations: you can only tell it things")
        lines.extend(f"  - {describe_operation(peer.name, op)}" for op in peer.operations)
    return "\n".join(lines)


def render_interface(peer: PeerInfo) -> str:
    """A peer's full contract: operations with their schemas, then its free text."""
    parts = [f"# {peer.name}" + (f": {peer.role}" if peer.role else "")]
    if not peer.operations:
        parts.append("No operations: this agent accepts only tells (tell_agent).")
    for op in peer.operations:
        parts.append(f"## {op.name}\n{op.description}".rstrip())
        parts.append("input schema: " + json.dumps(op.input_schema, sort_keys=True))
        parts.append("output schema: " + json.dumps(op.output_schema, sort_keys=True))
    if peer.interface_text.strip():
        parts.append(peer.interface_text.strip())
    return "\n\n".join(parts)


# --- the tools -----------------------------------------------------------------------------


class _Keys:
    """Idempotency keys derived from (item, request, how often it was sent during this item).

    The same request sent twice on purpose during one item gets two keys; the same request sent
    again after a crash and a redelivery gets the first key back, so the peer is not asked twice.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def derive(self, item: str | None, *parts: Any) -> str | None:
        if item is None:
            return None
        base = json.dumps([item, *parts], sort_keys=True, default=str)
        with self._lock:
            occurrence = self._counts.get(base, 0)
            self._counts[base] = occurrence + 1
        return hashlib.sha256(f"{base}#{occurrence}".encode()).hexdigest()[:32]


def peer_tools(
    client: PeerClient,
    current_item: CurrentItem = lambda: None,
    *,
    peers: list[PeerInfo] | None = None,
) -> list[Tool]:
    """The four peer tools. Given `peers`, ask_agent's description lists their operations."""
    keys = _Keys()
    names = [peer.name for peer in peers] if peers is not None else None

    def list_peers(_: dict[str, Any]) -> str:
        return describe_peers(client.peers())

    def read_interface(args: dict[str, Any]) -> str:
        wanted = str(args["agent"])
        found = client.peers()
        for peer in found:
            if peer.name == wanted:
                return render_interface(peer)
        known = ", ".join(peer.name for peer in found) or "none"
        raise ToolError(f"{wanted!r} is not one of your peers (peers: {known})")

    def ask_agent(args: dict[str, Any]) -> str:
        item = current_item()
        payload = args.get("input") or {}
        request = AskRequest(
            to=str(args["agent"]),
            operation=str(args["operation"]),
            input=payload,
            timeout_s=float(args.get("timeout_s") or DEFAULT_ASK_TIMEOUT_S),
            parent_item=item,
            idempotency_key=keys.derive(item, "ask", args["agent"], args["operation"], payload),
        )
        result = client.ask(request)
        if not result.ok:
            raise ToolError(_refusal(result.error, result.message_id))
        return json.dumps(result.output, ensure_ascii=False)

    def tell_agent(args: dict[str, Any]) -> str:
        item = current_item()
        request = TellRequest(
            to=str(args["agent"]),
            text=str(args["text"]),
            parent_item=item,
            idempotency_key=keys.derive(item, "tell", args["agent"], args["text"]),
        )
        result = client.tell(request)
        if not result.ok:
            raise ToolError(_refusal(result.error, result.message_id))
        return f"delivered to {request.to} (message {result.message_id})"

    agent_param: dict[str, Any] = {"type": "string", "description": "The peer agent's name"}
    if names:
        agent_param = {**agent_param, "enum": names}
    ask_description = (
        "Ask a peer agent to perform one operation of its INTERFACE.md and wait for its structured"
        " answer (JSON). The input must match the operation's input schema."
    )
    if peers:
        ask_description += "\nOperations you may call:\n" + "\n".join(
            f"- {describe_operation(peer.name, op)}" for peer in peers for op in peer.operations
        )
    return [
        Tool(
            name="list_peers",
            description="List the agents you may talk to, with the operations each one offers.",
            parameters={"type": "object", "properties": {}, "additionalProperties": False},
            handler=list_peers,
        ),
        Tool(
            name="read_interface",
            description="Read a peer's full INTERFACE.md: its operations, their JSON schemas and its notes.",
            parameters={
                "type": "object",
                "properties": {"agent": agent_param},
                "required": ["agent"],
                "additionalProperties": False,
            },
            handler=read_interface,
        ),
        Tool(
            name="ask_agent",
            description=ask_description,
            parameters={
                "type": "object",
                "properties": {
                    "agent": agent_param,
                    "operation": {"type": "string", "description": "The operation's name"},
                    "input": {"type": "object", "description": "The operation's input, as its schema says"},
                    "timeout_s": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "maximum": MAX_ASK_TIMEOUT_S,
                        "description": f"How long to wait for the answer (default {DEFAULT_ASK_TIMEOUT_S:g}s)",
                    },
                },
                "required": ["agent", "operation", "input"],
                "additionalProperties": False,
            },
            handler=ask_agent,
        ),
        Tool(
            name="tell_agent",
            description="Send a peer a message without waiting for an answer (fire and forget).",
            parameters={
                "type": "object",
                "properties": {
                    "agent": agent_param,
                    "text": {"type": "string", "minLength": 1, "description": "The message"},
                },
                "required": ["agent", "text"],
                "additionalProperties": False,
            },
            handler=tell_agent,
        ),
    ]


def _refusal(error: BrokerError | None, message_id: str) -> str:
    if error is None:
        return f"the broker gave no answer (message {message_id})"
    details = "".join(f"\n- {detail}" for detail in error.details)
    return f"{error.code}: {error.message}{details}"

"""Ask and tell between agents, enforced: ACLs, contracts, loop protection, durable delivery.

An ask is checked before anything is delivered, in this order: the callee exists, the sender
may talk to it (`talks_to`, default deny; the operator may ask anyone), the chain it belongs to
stays under the hop limit and does not come back to an agent already in it, the operation
exists in the callee's contract in force, and the input satisfies its schema. Only then is a
PEER_ASK item queued in the callee's durable inbox; the answer is validated against the
output schema before the caller sees it. Every ask and tell, refused or not, is logged.

Loop protection follows the `trace` carried by inbox items: an item's trace lists the senders
of the chain that led to it. Asks refuse any cycle (A -> B -> A would deadlock anyway). Tells
only count hops, so an agent may answer a tell with a tell, but a chain of them ends.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agent_runtime import validate_payload
from agent_runtime.protocol import (
    AskRequest,
    AskResult,
    BrokerError,
    ItemKind,
    OperationSpec,
    PeerInfo,
    TellRequest,
    TellResult,
    WorkResult,
)
from orchestrator.broker.interfaces import InterfaceStore
from orchestrator.broker.messages import MessageKind, MessageLog, MessageRecord, MessageState
from orchestrator.control.auth import OPERATOR
from orchestrator.events import EventBus, EventType
from orchestrator.fleet.view import FleetView
from orchestrator.state.db import Database
from orchestrator.state.paths import StatePaths

if TYPE_CHECKING:
    from orchestrator.broker.inbox import Inbox

DEFAULT_MAX_HOPS = 4
# Someone is blocked on an ask; a tell can wait behind it.
ASK_PRIORITY = 5
TELL_PRIORITY = 1
MAX_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Lineage:
    """Where a new message sits in its chain."""

    parent_item: str | None
    hop: int
    trace: list[str]


class Refused(Exception):
    """A message stopped before delivery; carries the structured error for the caller."""

    def __init__(self, error: BrokerError) -> None:
        super().__init__(error.message)
        self.error = error


def _refuse(code: Any, message: str, details: list[str] | None = None) -> Refused:
    return Refused(BrokerError(code=code, message=message, details=details or []))


class Broker:
    def __init__(
        self,
        db: Database,
        inbox: Inbox,
        fleet: FleetView,
        events: EventBus,
        paths: StatePaths,
        max_hops: int = DEFAULT_MAX_HOPS,
    ) -> None:
        self._fleet = fleet
        self._events = events
        self._inbox = inbox
        self._db = db
        self.max_hops = max_hops
        self.messages = MessageLog(db)
        self.interfaces = InterfaceStore(
            lambda agent: self._fleet.current().interfaces.get(agent, ""), paths.workspace
        )
        self._bound_loop: asyncio.AbstractEventLoop | None = None
        self.can_pay: Callable[[str], bool] = lambda agent: True
        """Whether an agent's budget can pay for more model calls (the gateway's budgets)."""
        # Read every contract once now, so a later broken rewrite has a good one to fall back on.
        for agent in fleet.current().config.agents:
            self.interfaces.state(agent)

    # --- who may talk to whom ----------------------------------------------------------------

    def exists(self, agent: str) -> bool:
        return agent in self._fleet.current().config.agents

    def may_talk(self, sender: str, recipient: str) -> bool:
        if sender == OPERATOR:
            return self.exists(recipient)
        agents = self._fleet.current().config.agents
        return sender in agents and recipient in agents[sender].talks_to

    def peers(self, agent: str) -> list[PeerInfo]:
        """The agents `agent` may talk to, with the operations of the contract in force for each."""
        config = self._fleet.current().config
        names = list(config.agents) if agent == OPERATOR else list(config.agents[agent].talks_to)
        infos = []
        for name in names:
            if name not in config.agents:
                continue
            interface = self.interfaces.current(name)
            infos.append(
                PeerInfo(
                    name=name,
                    role=config.agents[name].role,
                    operations=list(interface.operations),
                    interface_text=interface.body,
                )
            )
        return infos

    # --- ask ---------------------------------------------------------------------------------

    async def ask(self, sender: str, request: AskRequest, *, priority: int = ASK_PRIORITY) -> AskResult:
        self._bind_loop()
        message_id = uuid.uuid4().hex
        lineage: Lineage | None = None
        try:
            self._check_recipient(sender, request.to)
            lineage = self._lineage(sender, request.parent_item)
            self._check_loop(request.to, lineage, cycles=True)
            self._check_payer(sender, request.to, lineage)
            spec = self._operation(request.to, request.operation)
            problems = validate_payload(spec.input_schema, request.input)
            if problems:
                raise _refuse(
                    "invalid_input",
                    f"input does not match the input schema of {request.to}.{request.operation}",
                    problems,
                )
        except Refused as refused:
            self._log_refusal(
                message_id, MessageKind.ASK, sender, request, lineage=lineage, error=refused.error
            )
            return AskResult(message_id=message_id, ok=False, error=refused.error)

        timeout_s = min(max(request.timeout_s, 0.001), MAX_TIMEOUT_S)
        if request.idempotency_key and (
            earlier := self.messages.by_key(sender, request.to, request.idempotency_key)
        ):
            return await self._await_answer(earlier, spec, timeout_s)
        record = self._deliver(
            MessageKind.ASK,
            sender,
            request.to,
            message_id,
            lineage,
            operation=request.operation,
            input=request.input,
            priority=priority,
            ttl_s=timeout_s,
            idempotency_key=request.idempotency_key,
        )
        return await self._await_answer(record, spec, timeout_s)

    async def _await_answer(self, message: MessageRecord, spec: OperationSpec, timeout_s: float) -> AskResult:
        assert message.item_id is not None
        result = await self._inbox.wait_result(message.item_id, timeout_s)
        error = (
            self._no_answer(message, timeout_s) if result is None else _answer_problem(message, spec, result)
        )
        if error is not None:
            self._close(message, MessageState.FAILED, error, EventType.MESSAGE_FAILED, message.sender)
            return AskResult(message_id=message.id, ok=False, error=error)
        assert result is not None
        self._close(message, MessageState.ANSWERED, None, EventType.MESSAGE_DELIVERED, message.recipient)
        return AskResult(message_id=message.id, ok=True, output=_output_of(result))

    def _close(
        self,
        message: MessageRecord,
        state: MessageState,
        error: BrokerError | None,
        event: EventType,
        agent: str,
    ) -> None:
        """Record how an ask ended and announce it, in one transaction."""
        outcome = {"error": error.code} if error is not None else {"sender": message.sender}
        with self._db.transaction():
            self.messages.finish(message.id, state, error)
            self._publish(
                event,
                agent,
                message.id,
                to=message.recipient,
                operation=message.operation,
                hop=message.hop,
                **outcome,
            )

    def _no_answer(self, message: MessageRecord, timeout_s: float) -> BrokerError:
        assert message.item_id is not None
        state = self._inbox.state(message.item_id)
        if state in ("queued", "expired"):
            # Nobody picked it up: close it so it is not handed out after the caller gave up.
            self._inbox.fail(message.item_id, "expired: the caller stopped waiting")
            return BrokerError(
                code="expired",
                message=f"{message.recipient} did not pick up the request within {timeout_s:g}s",
            )
        return BrokerError(
            code="timeout", message=f"{message.recipient} did not answer within {timeout_s:g}s"
        )

    # --- tell --------------------------------------------------------------------------------

    async def tell(self, sender: str, request: TellRequest, *, priority: int = TELL_PRIORITY) -> TellResult:
        self._bind_loop()
        message_id = uuid.uuid4().hex
        lineage: Lineage | None = None
        try:
            self._check_recipient(sender, request.to)
            lineage = self._lineage(sender, request.parent_item)
            self._check_loop(request.to, lineage, cycles=False)
            self._check_payer(sender, request.to, lineage)
        except Refused as refused:
            self._log_refusal(
                message_id, MessageKind.TELL, sender, request, lineage=lineage, error=refused.error
            )
            return TellResult(message_id=message_id, ok=False, error=refused.error)
        if request.idempotency_key and (
            earlier := self.messages.by_key(sender, request.to, request.idempotency_key)
        ):
            return TellResult(message_id=earlier.id, ok=True)
        self._deliver(
            MessageKind.TELL,
            sender,
            request.to,
            message_id,
            lineage,
            text=request.text,
            priority=priority,
            idempotency_key=request.idempotency_key,
        )
        return TellResult(message_id=message_id, ok=True)

    def _deliver(
        self,
        kind: MessageKind,
        sender: str,
        to: str,
        message_id: str,
        lineage: Lineage,
        *,
        priority: int,
        idempotency_key: str | None,
        operation: str | None = None,
        input: dict[str, Any] | None = None,
        text: str = "",
        ttl_s: float | None = None,
    ) -> MessageRecord:
        """Queue the item, log the message and announce it in one transaction: one commit, not three."""
        asking = kind == MessageKind.ASK
        with self._db.transaction():
            item = self._inbox.submit(
                to,
                ItemKind.PEER_ASK if asking else ItemKind.PEER_TELL,
                sender,
                text,
                operation=operation,
                input=input,
                correlation_id=message_id,
                hop=lineage.hop,
                trace=lineage.trace,
                priority=priority,
                ttl_s=ttl_s,
                idempotency_key=_scoped_key(sender, idempotency_key),
                payer=self._payer(sender, lineage),
            )
            record = self.messages.record(
                message_id,
                kind,
                sender,
                to,
                operation=operation,
                parent_item=lineage.parent_item,
                hop=lineage.hop,
                trace=lineage.trace,
                state=MessageState.PENDING if asking else MessageState.SENT,
                item_id=item.id,
                idempotency_key=idempotency_key,
            )
            self._publish(
                EventType.MESSAGE_SENT, sender, message_id, to=to, operation=operation, hop=lineage.hop
            )
            if not asking:
                # A tell is delivered once it sits in the recipient's durable inbox.
                self._publish(
                    EventType.MESSAGE_DELIVERED,
                    to,
                    message_id,
                    to=to,
                    operation=None,
                    hop=lineage.hop,
                    sender=sender,
                )
        return record

    # --- checks ------------------------------------------------------------------------------

    def _check_recipient(self, sender: str, recipient: str) -> None:
        if not self.exists(recipient):
            raise _refuse("unknown_agent", f"there is no agent named {recipient!r} in this fleet")
        if not self.may_talk(sender, recipient):
            allowed = ", ".join(self._talks_to(sender)) or "nobody"
            raise _refuse(
                "acl_denied",
                f"{sender} may not talk to {recipient}: it is not in {sender}'s talks_to"
                f" (allowed: {allowed})",
            )

    def _talks_to(self, sender: str) -> list[str]:
        agent = self._fleet.current().config.agents.get(sender)
        return list(agent.talks_to) if agent else []

    def _lineage(self, sender: str, parent_item: str | None) -> Lineage:
        """The chain a new message continues: the named item, else what the sender is working on."""
        if parent_item is not None:
            if self._inbox.owner(parent_item) != sender:
                raise _refuse("failed", f"parent_item {parent_item!r} is not an item of {sender}'s inbox")
            parent = self._inbox.get(parent_item)
        else:
            parent = None if sender == OPERATOR else self._inbox.latest_claimed(sender)
        if parent is None:
            return Lineage(None, 1, [sender])
        return Lineage(parent.id, parent.hop + 1, [*parent.trace, sender])

    def _payer(self, sender: str, lineage: Lineage) -> str | None:
        """Who pays for the work a peer's message causes (who asks pays): the sender, or the one
        paying for the item the sender works on. None for the operator (the recipient pays)."""
        if sender == OPERATOR:
            return None
        inherited = self._inbox.payer_of_item(lineage.parent_item) if lineage.parent_item else None
        return inherited or sender

    def _check_payer(self, sender: str, recipient: str, lineage: Lineage) -> None:
        payer = self._payer(sender, lineage)
        if payer is not None and not self.can_pay(payer):
            whose = "its" if payer == sender else f"{payer}'s, which pays for {sender}'s work,"
            raise _refuse(
                "failed",
                f"{recipient} takes no item from {sender} now: the work on it would be paid from "
                f"{whose} model budget (who asks pays), and that budget is exhausted",
            )

    def _check_loop(self, recipient: str, lineage: Lineage, *, cycles: bool) -> None:
        if lineage.hop > self.max_hops:
            path = " -> ".join([*lineage.trace, recipient])
            raise _refuse(
                "hop_limit",
                f"this chain would take {lineage.hop} hops, more than the limit of {self.max_hops}",
                [f"path: {path}"],
            )
        if cycles and recipient in lineage.trace:
            path = " -> ".join([*lineage.trace, recipient])
            raise _refuse(
                "cycle",
                f"{recipient} is already waiting in this chain; asking it again would loop",
                [f"path: {path}"],
            )

    def _operation(self, recipient: str, operation: str) -> OperationSpec:
        interface = self.interfaces.current(recipient)
        spec = interface.operation(operation)
        if spec is None:
            offered = ", ".join(interface.operation_names) or "none (it only accepts tells)"
            raise _refuse(
                "unknown_operation",
                f"{recipient} has no operation {operation!r} in its INTERFACE.md (operations: {offered})",
            )
        return spec

    # --- bookkeeping -------------------------------------------------------------------------

    def _bind_loop(self) -> None:
        """Inbox wake-ups (results, arrivals) are delivered on the loop that serves requests."""
        loop = asyncio.get_running_loop()
        if loop is not self._bound_loop:
            self._inbox.bind_loop(loop)
            self._bound_loop = loop

    def _log_refusal(
        self,
        message_id: str,
        kind: MessageKind,
        sender: str,
        request: AskRequest | TellRequest,
        *,
        lineage: Lineage | None,
        error: BrokerError,
    ) -> None:
        operation = request.operation if isinstance(request, AskRequest) else None
        with self._db.transaction():
            self.messages.record(
                message_id,
                kind,
                sender,
                request.to,
                operation=operation,
                parent_item=lineage.parent_item if lineage else request.parent_item,
                hop=lineage.hop if lineage else 0,
                trace=lineage.trace if lineage else [sender],
                state=MessageState.REFUSED,
                error=error,
            )
            self._publish(
                EventType.MESSAGE_FAILED,
                sender,
                message_id,
                to=request.to,
                operation=operation,
                hop=lineage.hop if lineage else 0,
                error=error.code,
            )

    def _publish(
        self,
        event: EventType,
        agent: str,
        message_id: str,
        *,
        to: str,
        operation: str | None,
        hop: int,
        **extra: Any,
    ) -> None:
        self._events.publish(
            event, agent=agent, message_id=message_id, to=to, operation=operation, hop=hop, **extra
        )


def _scoped_key(sender: str, key: str | None) -> str | None:
    """Idempotency keys are the sender's own: two senders may pick the same key."""
    return f"{sender}:{key}" if key else None


def _output_of(result: WorkResult) -> dict[str, Any]:
    """An answer with no structured output is read as {"text": its reply text}."""
    return result.output if result.output is not None else {"text": result.text}


def _answer_problem(message: MessageRecord, spec: OperationSpec, result: WorkResult) -> BrokerError | None:
    where = f"{message.recipient}.{message.operation}"
    if not result.ok:
        return BrokerError(
            code="failed", message=f"{where} failed: {result.error or result.text or 'no reason given'}"
        )
    problems = validate_payload(spec.output_schema, _output_of(result))
    if problems:
        return BrokerError(
            code="invalid_output",
            message=f"the answer of {where} does not match its output schema",
            details=problems,
        )
    return None

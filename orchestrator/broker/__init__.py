"""The broker: durable per-agent inboxes (`Inbox`, the one entry producers queue items through),
ask and tell between agents under ACLs, contracts and loop protection (`Broker`), the message
log, request traces and the checks of INTERFACE.md contracts.

Other packages import the names below from here; the modules behind them are this package's
own. The names load on first use: a command that checks contracts does not load the inbox.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.broker.broker import MAX_TIMEOUT_S, Broker
    from orchestrator.broker.contracts_check import (
        ContractsReport,
        check_offline,
        check_running,
        check_seeded,
    )
    from orchestrator.broker.dead_letters import DeadLetter
    from orchestrator.broker.inbox import Inbox
    from orchestrator.broker.items import new_item_id
    from orchestrator.broker.messages import (
        MessageKind,
        MessageLog,
        MessageState,
        MessageTrace,
        asks_finished_between,
    )
    from orchestrator.broker.repair import keep_messages_in_step, repair_messages
    from orchestrator.broker.request_trace import (
        AmbiguousId,
        RequestTrace,
        RequestTracer,
        TraceNotFound,
        TraceStep,
    )
    from orchestrator.broker.views import (
        FailedItem,
        InboxCounts,
        ItemTiming,
        item_ids_like,
        item_timing,
        items_finished_between,
        queue_depths,
    )

_EXPORTS = {
    "MAX_TIMEOUT_S": "orchestrator.broker.broker",
    "Broker": "orchestrator.broker.broker",
    "ContractsReport": "orchestrator.broker.contracts_check",
    "check_offline": "orchestrator.broker.contracts_check",
    "check_running": "orchestrator.broker.contracts_check",
    "check_seeded": "orchestrator.broker.contracts_check",
    "DeadLetter": "orchestrator.broker.dead_letters",
    "Inbox": "orchestrator.broker.inbox",
    "new_item_id": "orchestrator.broker.items",
    "MessageKind": "orchestrator.broker.messages",
    "MessageLog": "orchestrator.broker.messages",
    "MessageState": "orchestrator.broker.messages",
    "MessageTrace": "orchestrator.broker.messages",
    "asks_finished_between": "orchestrator.broker.messages",
    "keep_messages_in_step": "orchestrator.broker.repair",
    "repair_messages": "orchestrator.broker.repair",
    "AmbiguousId": "orchestrator.broker.request_trace",
    "RequestTrace": "orchestrator.broker.request_trace",
    "RequestTracer": "orchestrator.broker.request_trace",
    "TraceNotFound": "orchestrator.broker.request_trace",
    "TraceStep": "orchestrator.broker.request_trace",
    "FailedItem": "orchestrator.broker.views",
    "InboxCounts": "orchestrator.broker.views",
    "ItemTiming": "orchestrator.broker.views",
    "item_ids_like": "orchestrator.broker.views",
    "item_timing": "orchestrator.broker.views",
    "items_finished_between": "orchestrator.broker.views",
    "queue_depths": "orchestrator.broker.views",
}

__all__ = [
    "MAX_TIMEOUT_S",
    "AmbiguousId",
    "Broker",
    "ContractsReport",
    "DeadLetter",
    "FailedItem",
    "Inbox",
    "InboxCounts",
    "ItemTiming",
    "MessageKind",
    "MessageLog",
    "MessageState",
    "MessageTrace",
    "RequestTrace",
    "RequestTracer",
    "TraceNotFound",
    "TraceStep",
    "asks_finished_between",
    "check_offline",
    "check_running",
    "check_seeded",
    "item_ids_like",
    "item_timing",
    "items_finished_between",
    "keep_messages_in_step",
    "new_item_id",
    "queue_depths",
    "repair_messages",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'orchestrator.broker' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)

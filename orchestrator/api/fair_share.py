"""Each agent's rates (fleet.yaml `limits.rates`), checked on every route and frame that carries
an event, a run record, a tell or an ask, whichever way it arrives; over them a 429 with
Retry-After."""

from __future__ import annotations

from agent_runtime.protocol import AskRequest, TellRequest
from orchestrator.api.limits import payload_size
from orchestrator.fair_share.limiter import MessageKind
from orchestrator.services import Services


def admit_event(services: Services, agent: str) -> None:
    services.fair_share.admit_event(agent)


def admit_run(services: Services, agent: str) -> None:
    services.fair_share.admit_run(agent)


def admit_message(services: Services, sender: str, request: AskRequest | TellRequest) -> None:
    """Charge a tell or an ask to its sender, and to its recipient only when the sender may talk
    to it (a message the ACL refuses costs the recipient nothing)."""
    recipient = request.to if services.broker.may_talk(sender, request.to) else None
    kind: MessageKind = "tell" if isinstance(request, TellRequest) else "ask"
    services.fair_share.admit_message(sender, kind, recipient, payload_size(request))

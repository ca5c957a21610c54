"""The components a route needs that an orchestrator may run without (the inbox, the scheduler,
the LLM gateway): each one, or a 503 naming it."""

from __future__ import annotations

from orchestrator.api.errors import ApiError
from orchestrator.broker.inbox import Inbox
from orchestrator.gateway.service import Gateway
from orchestrator.scheduler.service import Scheduler
from orchestrator.services import Services


def inbox_of(services: Services) -> Inbox | None:
    """The inbox, or None where only the orchestrator's core parts run (no inbox attached)."""
    inbox: Inbox | None = getattr(services, "inbox", None)
    return inbox


def scheduler_of(services: Services) -> Scheduler:
    scheduler: Scheduler | None = getattr(services, "scheduler", None)
    if scheduler is None:
        raise ApiError(503, "unavailable", "the scheduler is not running in this orchestrator")
    return scheduler


def gateway_of(services: Services) -> Gateway:
    gateway: Gateway | None = getattr(services, "gateway", None)
    if gateway is None:
        raise ApiError(503, "unavailable", "the LLM gateway is not running in this orchestrator")
    return gateway

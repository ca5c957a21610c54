"""Alerts: rules on the fleet's events (fleet.yaml `alerts:`), delivered to webhooks."""

from orchestrator.alerts.dispatcher import AlertDispatcher
from orchestrator.alerts.store import AlertRecord, AlertStore

__all__ = ["AlertDispatcher", "AlertRecord", "AlertStore"]

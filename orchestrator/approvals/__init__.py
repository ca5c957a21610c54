"""Tool calls that wait for an operator: approval items, their decisions and their timeouts, and
the orchestrator's own check of approval rules on the actions an agent sends (`enforce`).

Imports the state database, events and wire models; never the API or the CLI."""

from orchestrator.approvals.enforce import ApprovalRules
from orchestrator.approvals.store import AlreadyDecided, ApprovalStore, UnknownApproval

__all__ = ["AlreadyDecided", "ApprovalRules", "ApprovalStore", "UnknownApproval"]

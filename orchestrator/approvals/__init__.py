"""Tool calls that wait for an operator: approval items, their decisions and their timeouts."""

from orchestrator.approvals.store import AlreadyDecided, ApprovalStore, UnknownApproval

__all__ = ["AlreadyDecided", "ApprovalStore", "UnknownApproval"]

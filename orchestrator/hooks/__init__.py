"""Inbound hooks (fleet.yaml `hooks:`): a signed HTTP request from outside becomes an inbox item
for one agent. Owns verifying signatures, refusing replays, rate limits per hook, rendering the
payload as text, and the tables `hook_deliveries` and `hook_counts`.

A hook is untrusted input: its body is capped, checked against its sender's signature before it
is read, and handed to the agent as data marked as coming from `hook:NAME`, never as the operator.
Must not import the HTTP layer (`orchestrator.api`).
"""

from orchestrator.hooks.receiver import HookAccepted, HookReceiver, HookRefused, HookRequest

__all__ = ["HookAccepted", "HookReceiver", "HookRefused", "HookRequest"]

"""Who may act, and the operator's holds: the tokens of the operator and of each agent (`auth`),
and the holds the operator puts on agents (`holds`: stopped, paused), read by every part that
would otherwise wake or start one.

Depends only on `orchestrator.config` and `orchestrator.state`; must not import the fleet, the
agents, the HTTP layer, the CLI or the composition root.
"""

# The modules other packages may import; the rest are this package's own.
__all__ = ["auth", "holds"]

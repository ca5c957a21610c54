"""Who may act: the tokens of the operator and of each agent (`auth`). The operator's holds on
agents (stopped, paused) are part of each agent's lifecycle (`orchestrator.lifecycle.holds`).

Depends only on `orchestrator.config` and `orchestrator.state`; must not import the fleet, the
agents, the HTTP layer, the CLI or the composition root.
"""

# The modules other packages may import; the rest are this package's own.
__all__ = ["auth"]

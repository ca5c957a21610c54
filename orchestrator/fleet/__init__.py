"""The fleet as declared: the fleet in force (`view`), turning fleet.yaml into running units and
back (`manager`, `reconcile`), seeding workspaces and starter files (`seeding`, `scaffold`), and
where agents were placed by hand (`placement`).

Must not import `orchestrator.running_agents` (which builds on it), the HTTP layer (`orchestrator.api`),
the CLI or the composition root.
"""

# The modules other packages may import; the rest are this package's own.
__all__ = ["manager", "placement", "reconcile", "scaffold", "seeding", "unit_board", "validation", "view"]

"""Workflows: declared multi-agent pipelines (fleet.yaml `workflows:`) run durably from state.db.

The typed shape of the section is `orchestrator.config.workflows`; `validation` the checks that need the whole fleet,
`expressions` the JMESPath conditions and input mappings, `store` the tables of runs and steps,
`engine` what moves a run forward by putting its steps into the agents' inboxes, `service` its
loop, `triggers` the schedules, events and hooks that start runs.

Owns the tables `workflow_runs`, `workflow_steps` and `workflow_triggers` (in `store`). Reaches
agents only through the broker's inbox and the approvals store, never through a backend or a
channel; imports nothing of the HTTP layer or the composition root.
"""

# The modules other packages may import; the rest are this package's own.
__all__ = ["engine", "expressions", "service", "spans", "store", "triggers", "validation"]

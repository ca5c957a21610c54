"""Workflows: declared multi-agent pipelines (fleet.yaml `workflows:`) run durably from state.db.

`model` is the typed shape of the section, `validation` the checks that need the whole fleet,
`expressions` the JMESPath conditions and input mappings, `store` the tables of runs and steps,
`engine` what moves a run forward by putting its steps into the agents' inboxes, `service` its
loop, `triggers` the schedules, events and hooks that start runs.

Owns the tables `workflow_runs`, `workflow_steps` and `workflow_triggers` (in `store`). Reaches
agents only through the broker's inbox and the approvals store, never through a backend or a
channel; imports nothing of the HTTP layer or the composition root.
"""

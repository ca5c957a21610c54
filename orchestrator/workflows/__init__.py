"""Workflows: declared multi-agent pipelines (fleet.yaml `workflows:`) run durably from state.db.

`model` is the typed shape of the section, `validation` the checks that need the whole fleet,
`expressions` the JMESPath conditions and input mappings, `store` the tables of runs and steps,
`engine` what moves a run forward by putting its steps into the agents' inboxes.
"""

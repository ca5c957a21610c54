"""Routes the operator calls (the CLI, the dashboard, a scraper): the fleet, messages and inboxes,
workspaces, memory, events, metrics, controls, alerts, runs and costs. Operator token only."""

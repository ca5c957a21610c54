"""The operator's copy of each agent's workspace: reading it, the one write path into it, the
watcher that records direct edits, and the retention of its versions."""

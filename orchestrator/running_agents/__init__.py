"""What the orchestrator does with an agent while it runs: its open link and the requests sent
over it (`requests`, `ask`), what it is served when it reports in (`session`), its health and
supervision with restarts (`health`, `supervisor`), the runtime snapshot handed out with each
item (`snapshot`), moves between nodes (`move`), its transcripts (`transcripts`) and the
operator's actions on it (`actions`: stop, start, pause, resume).

Builds on `orchestrator.fleet` (the fleet as declared) and `orchestrator.control`; must not import
the HTTP layer (`orchestrator.api`), the CLI or the composition root (`wiring`, `services`, `server`).
"""

# The modules other packages may import; the rest are this package's own.
__all__ = ["actions", "ask", "health", "move", "requests", "session", "snapshot", "supervisor", "transcripts"]

"""The web dashboard's static files (served by orchestrator.api.operator.dashboard)."""

# Nothing here is imported: the package holds the dashboard's static files.
__all__: list[str] = []

"""The web dashboard's static files (served by orchestrator.api.operator.dashboard)."""

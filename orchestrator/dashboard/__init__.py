"""The web dashboard's static files (served by orchestrator.operator.dashboard_routes)."""

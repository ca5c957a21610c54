"""Test helpers shipped with the orchestrator: an in-thread uvicorn server and a fake upstream."""

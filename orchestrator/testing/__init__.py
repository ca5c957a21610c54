"""Test helpers shipped with the orchestrator: an in-thread uvicorn server and a fake upstream."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["agent_link", "cli", "fake_backend", "fake_fleet", "fake_upstream", "llama_server", "server"]

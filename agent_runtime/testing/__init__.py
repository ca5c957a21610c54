"""Deterministic fakes shipped with the agent runtime, for tests and offline demos."""

from agent_runtime.testing.embeddings import deterministic_embedding

__all__ = ["deterministic_embedding"]

"""Deterministic fakes shipped with the agent runtime, for tests and offline demos."""

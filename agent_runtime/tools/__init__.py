"""Tools the agent's model can call."""

"""The operator's access to an agent's memory, which lives in the agent's own storage and is
asked of the agent over its channel."""

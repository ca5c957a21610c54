"""The agent runtime: everything that runs inside an agent container."""

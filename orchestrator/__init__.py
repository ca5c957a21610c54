"""The Flotilla orchestrator: the host control plane."""

"""What the orchestrator reports about itself for monitoring: latency histograms, budget gauges."""

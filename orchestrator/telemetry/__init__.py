"""What the orchestrator reports about itself for monitoring: latency histograms, budget gauges."""

# The modules other packages may import; the rest are this package's own.
__all__ = ["budget_gauges", "budget_report", "histograms", "otel_spans", "tracing"]

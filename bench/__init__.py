"""Benchmarks: `python -m bench.run` runs them all and writes a markdown table."""

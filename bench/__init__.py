"""Benchmarks: `python -m bench.run` runs them all and writes a markdown table."""

from orchestrator.fleet.validation import register_fleet_checks

# Benchmarks load fleet.yaml as the CLI does: with every check.
register_fleet_checks()

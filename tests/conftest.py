"""What every test shares: fleet.yaml is validated with every check, as the CLI and the
orchestrator validate it."""

from orchestrator.fleet.validation import register_fleet_checks

register_fleet_checks()

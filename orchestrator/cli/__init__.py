"""The `flotilla` command line."""

from orchestrator.fleet.validation import register_fleet_checks

# Every command that loads fleet.yaml validates it with the checks of the packages above config.
register_fleet_checks()

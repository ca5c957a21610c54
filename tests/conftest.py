"""What every test shares: fleet.yaml is validated with every check, as the CLI and the
orchestrator validate it."""

from orchestrator.fleet.validation import register_fleet_checks

register_fleet_checks()

# The Docker tier's fixtures (engine client, agent image, a fleet name), for any test marked `docker`
# wherever its package's folder is.
from tests.docker_fixtures import agent_image, docker_client, fleet, source_snapshot  # noqa: E402, F401

"""What every test shares: fleet.yaml is validated with every check, as the CLI and the
orchestrator validate it; the fixtures of the docker tier (engine client, agent image, a fleet
name) and of the realmodel tier (a real model's server) serve a test of that tier in whichever
package's folder it lives."""

from orchestrator.fleet.validation import register_fleet_checks
from tests.docker_fixtures import agent_image, docker_client, fleet, source_snapshot  # noqa: F401
from tests.realmodel_fixtures import llama_server  # noqa: F401

register_fleet_checks()

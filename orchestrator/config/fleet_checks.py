"""The checks of fleet.yaml that need knowledge owned above config, registered by its owners.

Heartbeat rules, prices, contracts, seeded workspace files and secret sources are known to the
scheduler, the gateway, the broker, the fleet and the secrets packages. Config imports nothing
above it, so those packages register their checks here (`orchestrator.fleet.validation` does it
for all of them, and the composition root and the CLI call it) and `load_fleet` runs every
registered check in its one pass. Loading before any check is registered is refused: a fleet
validated without them would look sound when it is not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.config.fleet import LoadedFleet, Problems
    from orchestrator.config.models import FleetConfig
    from orchestrator.config.safe_yaml import FieldPath


@dataclass(frozen=True)
class CheckedFleet:
    """What a whole-fleet check reads. `fleet` has its talks_to entries trimmed to known peers (the
    unknown ones are reported already); `raw` is the file as parsed, for checks that must also
    see the parts the schema set aside; `contracts` is False when `flotilla contracts check`
    reports on the contracts itself; `secrets` is False for a command that never uses a secret's
    value (one that cannot be read is then a warning)."""

    fleet: LoadedFleet
    raw: dict[str, Any]
    contracts: bool
    secrets: bool = True


ConfigCheck = Callable[["FleetConfig"], Iterable[tuple["FieldPath", str]]]
"""A check of the config alone: each problem with the field it is in."""
FleetCheck = Callable[[CheckedFleet, "Problems"], None]
"""A check of the whole fleet, with the files fleet.yaml names read."""


class ChecksNotRegistered(RuntimeError):
    """fleet.yaml was loaded before the checks of the packages above config were registered."""


class FleetChecks:
    """The registered checks, by stage, in the order they run: `references` with the references
    between sections, `models` on the models and budgets once nothing else is wrong with the
    file, `fleet` on the whole fleet. Registering a name again replaces its check, so
    registering the whole set twice changes nothing."""

    def __init__(self) -> None:
        self.references: dict[str, ConfigCheck] = {}
        self.models: dict[str, ConfigCheck] = {}
        self.fleet: dict[str, FleetCheck] = {}

    def add_reference_check(self, name: str, check: ConfigCheck) -> None:
        self.references[name] = check

    def add_model_check(self, name: str, check: ConfigCheck) -> None:
        self.models[name] = check

    def add_fleet_check(self, name: str, check: FleetCheck) -> None:
        self.fleet[name] = check

    def require(self) -> None:
        if not (self.references or self.models or self.fleet):
            raise ChecksNotRegistered(
                "fleet.yaml cannot be validated yet: no check of the packages above config is "
                "registered (call orchestrator.fleet.validation.register_fleet_checks() first)"
            )


FLEET_CHECKS = FleetChecks()

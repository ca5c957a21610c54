"""fleet.yaml `backup:`: backups the orchestrator takes on its own, with retention."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from orchestrator.config.units import parse_duration

MIN_EVERY_S = 60.0


class BackupSchedule(BaseModel):
    """Take a backup (as `flotilla backup` does) every `every`, into `dir`, keeping the newest `keep`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    every: str = Field(description="How often, e.g. 6h or 1d (at least 1m)")
    keep: int = Field(default=7, ge=1, le=10_000, description="How many scheduled backups to keep")
    dir: str = Field(
        default=".flotilla/backups/scheduled",
        description="Where to write them, relative to the fleet folder unless absolute",
    )

    @field_validator("every")
    @classmethod
    def _every(cls, value: str) -> str:
        if parse_duration(value) < MIN_EVERY_S:
            raise ValueError(f"backup.every {value!r} is shorter than one minute")
        return value

    @property
    def every_s(self) -> float:
        return parse_duration(self.every)

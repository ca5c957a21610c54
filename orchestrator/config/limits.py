"""The `limits:` section of fleet.yaml: how much the orchestrator accepts from anyone.

Every input has a cap, so that no agent (and no mistaken operator) can break a channel, loop an
item forever or grow the orchestrator's state without bound. Sizes take the units of
`resources.memory` (64k, 1m, ...); each has a floor below which normal work would fail.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from orchestrator.config.fair_share import RatesConfig, RetentionConfig
from orchestrator.config.units import parse_duration, parse_memory

KIB = 1024
MIB = 1024 * KIB
# Below these, ordinary requests (a chat completion, a config reply) would be refused.
FLOORS = {
    "request_body": 64 * KIB,
    "channel_frame": 64 * KIB,
    "message": 1 * KIB,
    "payload": 1 * KIB,
    "event": 1 * KIB,
}


MIN_BACKUP_PART_S = 10.0


class LimitsConfig(BaseModel):
    """Caps on everything the orchestrator accepts; sizes in bytes or with k/m/g."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request_body: str | int = Field(
        default="16m", description="Largest HTTP request body on any route (413 above it)"
    )
    channel_frame: str | int = Field(
        default="16m", description="Largest WebSocket message an agent may send on its channel"
    )
    message: str | int = Field(default="1m", description="Largest operator message text")
    payload: str | int = Field(
        default="1m", description="Largest ask input, tell text or work result an agent sends"
    )
    event: str | int = Field(default="16k", description="Largest event data (JSON) an agent reports")
    delivery_attempts: int = Field(
        default=5, ge=1, le=100, description="Deliveries of an inbox item before it is dead-lettered"
    )
    workspace_versions: int = Field(
        default=100, ge=1, description="Versions kept per workspace file (the newest always stays)"
    )
    workspace_version_age: str | None = Field(
        default=None, description="Drop versions older than this (e.g. 90d); the newest always stays"
    )
    backup_files: int = Field(
        default=2000,
        ge=10,
        description="Files an agent's own part of a backup may hold; more makes that part incomplete",
    )
    backup_part_time: str = Field(
        default="10m",
        description="Longest an agent's own part of a backup may take, all its files; longer makes "
        "that part incomplete",
    )
    pending_approvals: int = Field(
        default=20,
        ge=1,
        le=10_000,
        description="Undecided approval requests an agent may have at once; more are refused (429)",
    )
    rates: RatesConfig = Field(
        default_factory=RatesConfig, description="How fast each agent may report events, tell and ask"
    )
    retention: RetentionConfig = Field(
        default_factory=RetentionConfig, description="How long and how much is kept of what agents leave"
    )

    @field_validator("request_body", "channel_frame", "message", "payload", "event")
    @classmethod
    def _size(cls, value: str | int, info: ValidationInfo) -> str | int:
        size = parse_memory(value)
        floor = FLOORS.get(info.field_name or "", 0)
        if size < floor:
            raise ValueError(f"{value!r} is below the floor of {floor // KIB}k")
        return value

    @field_validator("workspace_version_age")
    @classmethod
    def _age(cls, value: str | None) -> str | None:
        if value is not None:
            parse_duration(value)
        return value

    @field_validator("backup_part_time")
    @classmethod
    def _part_time(cls, value: str) -> str:
        if parse_duration(value) < MIN_BACKUP_PART_S:
            raise ValueError(f"{value!r} is shorter than {MIN_BACKUP_PART_S:g}s")
        return value

    def bytes_of(self, name: str) -> int:
        """One size limit in bytes: request_body, channel_frame, message, payload or event."""
        value: str | int = getattr(self, name)
        return parse_memory(value)

    @property
    def backup_part_time_s(self) -> float:
        return parse_duration(self.backup_part_time)

    @property
    def workspace_version_age_s(self) -> float | None:
        return parse_duration(self.workspace_version_age) if self.workspace_version_age else None

"""The manifest at the head of every backup archive: what it holds, with sums and format versions.

The archive is a plain tar. `manifest.json` comes first; every other member is listed in it with
its size and SHA-256. Paths inside the archive:

    fleet/fleet.yaml, fleet/<files fleet.yaml names>   the fleet folder (never .env or tokens)
    state/state.db                                      the orchestrator's state
    agents/<name>/operator/...                          the operator's copy: workspace + versions
    agents/<name>/own/...                               the agent's own files, as it snapshotted them
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# 2: an agent's part says whether it was taken from a stopped agent's storage. A release reads
# every format up to its own; the version is read before the rest, so a newer archive is named
# as such even when its manifest has fields this release does not know.
FORMAT_VERSION = 2
MANIFEST_NAME = "manifest.json"
STATE_DB = "state/state.db"
FLEET_PREFIX = "fleet/"
AGENTS_PREFIX = "agents/"

EntryKind = Literal["fleet", "state", "operator", "own"]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ArchiveEntry(StrictModel):
    path: str = Field(description="The member's name in the archive")
    size: int = Field(ge=0)
    sha256: str
    kind: EntryKind
    agent: str | None = None


class AgentPart(StrictModel):
    """One agent's part of the archive; `complete` is false when its own files could not be had."""

    name: str
    complete: bool
    memory_schema: str | None = Field(default=None, description="memory.db's schema version")
    has_memory: bool = False
    problem: str | None = None
    stopped: bool = Field(
        default=False,
        description="The agent did not run: its snapshot was taken without it, from its storage read-only",
    )


class Formats(StrictModel):
    """The versions of the formats inside, so that a later release knows what it reads."""

    archive: int = FORMAT_VERSION
    state_schema: int | None = Field(default=None, description="state.db's PRAGMA user_version")
    fleet_file: int | None = Field(default=None, description="fleet.yaml's `version`")


class FormatOnly(BaseModel):
    """The one field a release reads before anything else of a manifest."""

    format_version: int = 1


class Manifest(StrictModel):
    format_version: int = FORMAT_VERSION
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    fleet: str
    flotilla_version: str
    only_agent: str | None = Field(default=None, description="Set when the backup holds one agent")
    formats: Formats = Field(default_factory=Formats)
    agents: list[AgentPart] = Field(default_factory=list)
    entries: list[ArchiveEntry] = Field(default_factory=list)

    def agent(self, name: str) -> AgentPart | None:
        return next((part for part in self.agents if part.name == name), None)


def own_prefix(agent: str) -> str:
    return f"{AGENTS_PREFIX}{agent}/own/"


def operator_prefix(agent: str) -> str:
    return f"{AGENTS_PREFIX}{agent}/operator/"

"""The checks of a running orchestrator's own view: whether it answers, whether it met damage
in state.db, and which agents' disks are full (their check-ins carry the space left)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from orchestrator.config.units import format_bytes
from orchestrator.doctor.models import Finding


class LiveStatus(BaseModel):
    """What `GET /api/v1/fleet` answered (`status`), or why it could not be asked (`error`);
    both None when no orchestrator runs."""

    status: dict[str, Any] | None = None
    error: str | None = None


def check_live(live: LiveStatus) -> list[Finding]:
    if live.error is not None:
        return [
            Finding(
                check="orchestrator",
                severity="error",
                summary=f"the orchestrator does not answer: {live.error}",
                fix="flotilla down && flotilla up -d",
            )
        ]
    if live.status is None:
        return [Finding(check="orchestrator", severity="ok", summary="no orchestrator runs for this fleet")]
    findings = [Finding(check="orchestrator", severity="ok", summary="the orchestrator answers")]
    for problem in live.status.get("problems", []):
        if "state.db" in problem and "damaged" in problem:
            findings.append(
                Finding(
                    check="state_db",
                    severity="error",
                    summary=f"the running orchestrator reports: {problem}",
                    fix="flotilla down; flotilla restore ARCHIVE --force",
                )
            )
    findings += _full_disks(live.status.get("agents", []))
    return findings


def _full_disks(agents: list[dict[str, Any]]) -> list[Finding]:
    findings = []
    for agent in agents:
        if not agent.get("disk_full"):
            continue
        free = agent.get("disk_free_bytes")
        left = f"{format_bytes(free)} free" if free is not None else "free space unknown"
        name = agent.get("name")
        findings.append(
            Finding(
                check="volumes",
                severity="warning",
                agent=name,
                summary=f"agent {name}'s disk is full ({left}): it answers but keeps few records",
                fix=f"flotilla exec {name} -- du -sh /data/* (remove what is not needed), or raise resources.disk",
            )
        )
    return findings

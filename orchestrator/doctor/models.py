"""A doctor's findings: one per check, with its severity and the command that fixes it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Severity = Literal["ok", "warning", "error"]
SEVERITY_ORDER: dict[Severity, int] = {"ok": 0, "warning": 1, "error": 2}
EXIT_OK = 0
EXIT_WARNINGS = 1
EXIT_ERRORS = 2


class Finding(BaseModel):
    check: str = Field(description="What was checked: state_db, backups, engine, image, volumes, ...")
    severity: Severity
    summary: str = Field(description="What was found, in one sentence")
    fix: str | None = Field(default=None, description="The command (or step) that fixes it")
    agent: str | None = Field(default=None, description="The agent it is about, when one")


class DoctorReport(BaseModel):
    fleet: str
    runtime: str
    findings: list[Finding] = Field(default_factory=list)

    @property
    def severity(self) -> Severity:
        worst: Severity = "ok"
        for finding in self.findings:
            if SEVERITY_ORDER[finding.severity] > SEVERITY_ORDER[worst]:
                worst = finding.severity
        return worst

    def exit_code(self, state_damaged_code: int) -> int:
        """0 nothing wrong · 1 warnings · 2 errors · `state_damaged_code` when state.db is damaged."""
        if any(f.check == "state_db" and f.severity == "error" for f in self.findings):
            return state_damaged_code
        return {"ok": EXIT_OK, "warning": EXIT_WARNINGS, "error": EXIT_ERRORS}[self.severity]

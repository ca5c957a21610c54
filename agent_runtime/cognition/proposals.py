"""The model's way to change the `checkpoint` strategy's files, which it cannot write.

WORKING_MEMORY.md (in every prompt) and the semantic files steer the agent, so only their jobs
write them: `write_file` refuses `cognition/`. The model calls `propose_memory_change` instead,
and the proposal goes through what a saved fact goes through:
- credentials are redacted (`safety.redaction`);
- a proposal that states a forgotten fact is refused (the store's forget barriers);
- its provenance is stamped (`provenance.PersonWords`): `user_stated` only when a recent message
  of a person states it, else `agent`; a line the jobs wrote from a person's words is removed
  only when a person asked for it.
An accepted proposal waits in `<data>/cognition/proposals/` (outside the workspace, so the
model cannot edit it) until the job that owns the file runs: consolidation applies those for
WORKING_MEMORY.md, extraction those for the semantic files, and the run record counts them.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_runtime.cognition.files import SEMANTIC_FILES, WORKING_MEMORY, CognitionFiles
from agent_runtime.memory.forgetting import states_any
from agent_runtime.memory.provenance import PersonWords
from agent_runtime.safety.redaction import redact

Target = Literal["WORKING_MEMORY.md", "facts.md", "preferences.md", "projects.md"]
Section = Literal["Priorities", "Open threads", "Recent progress"]
TOOL_NAME = "propose_memory_change"
MAX_TEXT_CHARS = 300
# Lines the jobs wrote from a person's words carry this mark; the model removes them only when
# a person asked.
PERSON_MARK = "user_stated"


class ProposalInputError(ValueError):
    """The model's proposal is unusable; the message says which argument and why."""


class Proposal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file: Target
    action: Literal["add", "remove"] = "add"
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    section: Section = "Open threads"
    subject: str | None = Field(default=None, max_length=80)
    source: Literal["user_stated", "agent"] = "agent"
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class Proposals:
    """The proposals waiting for their job, one JSON file each."""

    def __init__(self, files: CognitionFiles) -> None:
        self.folder = files.private_dir / "proposals"

    def add(self, proposal: Proposal) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{proposal.at:%Y%m%dT%H%M%S%f}-{secrets.token_hex(3)}.json"
        path.write_text(proposal.model_dump_json(), encoding="utf-8")
        return path

    def waiting(self, files: tuple[str, ...]) -> list[tuple[Path, Proposal]]:
        """The proposals for these files, oldest first (an unreadable one is dropped)."""
        found = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                proposal = Proposal.model_validate_json(path.read_text(encoding="utf-8"))
            except (OSError, ValidationError):
                path.unlink(missing_ok=True)
                continue
            if proposal.file in files:
                found.append((path, proposal))
        return found


def proposal_line(proposal: Proposal) -> str:
    subject = f"[{proposal.subject}] " if proposal.subject else ""
    mark = f", {PERSON_MARK}" if proposal.source == PERSON_MARK else ""
    return f"- {subject}{proposal.text} ({proposal.at:%Y-%m-%d}{mark})"


def apply_to_lines(lines: list[str], proposal: Proposal) -> list[str]:
    """The lines of one file (or section) after the proposal."""
    if proposal.action == "remove":
        return [line for line in lines if not states_any(line, [proposal.text])]
    if proposal.subject:
        lines = [line for line in lines if not line.startswith(f"- [{proposal.subject}] ")]
    body = proposal_line(proposal).rsplit(" (", 1)[0]
    if any(line.rsplit(" (", 1)[0] == body for line in lines):
        return lines
    return (
        [proposal_line(proposal), *lines]
        if proposal.file == WORKING_MEMORY
        else [*lines, proposal_line(proposal)]
    )


PROPOSAL_SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file": {"type": "string", "enum": [WORKING_MEMORY, *SEMANTIC_FILES]},
        "action": {"type": "string", "enum": ["add", "remove"], "description": "Default add"},
        "text": {"type": "string", "description": "The line, one sentence (or, to remove, its words)"},
        "section": {
            "type": "string",
            "enum": ["Priorities", "Open threads", "Recent progress"],
            "description": "For WORKING_MEMORY.md: where the line goes (default Open threads)",
        },
        "subject": {"type": "string", "description": "A stable key; a newer line with it replaces the older"},
    },
    "required": ["file", "text"],
    "additionalProperties": False,
}
PROPOSAL_DESCRIPTION = (
    "Propose a change to your working memory (cognition/WORKING_MEMORY.md) or semantic memory "
    "(cognition/facts.md, preferences.md, projects.md). These files are written by your memory "
    "jobs only; the change is applied at the job's next run. A line stating something forgotten "
    "is refused; credentials are redacted."
)


class ProposalDesk:
    """Takes the model's proposals: redacted, checked against the barriers, stamped."""

    def __init__(
        self,
        files: CognitionFiles,
        people: PersonWords | None = None,
        forgotten: Callable[[str], bool] = lambda _text: False,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.files = files
        self.proposals = Proposals(files)
        self.people = people if people is not None else PersonWords()
        self.forgotten = forgotten
        self._now = clock or (lambda: datetime.now(UTC))

    def propose(self, arguments: dict[str, Any]) -> str:
        try:
            wanted = Proposal.model_validate({**arguments, "at": self._now()})
        except ValidationError as bad:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in bad.errors())
            raise ProposalInputError(problems) from None
        cleaned = redact(wanted.text)
        text = " ".join(cleaned.text.split())
        if self.forgotten(text):
            return json.dumps({"status": "refused", "message": "not proposed: it states a forgotten fact"})
        if wanted.action == "remove":
            refusal = self._person_line_refusal(wanted)
            if refusal is not None:
                return json.dumps({"status": "refused", "message": refusal})
        source = "user_stated" if self.people.support(text) is not None else "agent"
        proposal = wanted.model_copy(update={"text": text, "source": source})
        self.proposals.add(proposal)
        job = "consolidation" if proposal.file == WORKING_MEMORY else "extraction"
        message = f"proposed ({source}); the {job} job applies it at its next run"
        if cleaned.kinds:
            message += f"; credentials redacted ({', '.join(cleaned.kinds)})"
        return json.dumps({"status": "proposed", "provenance": source, "message": message})

    def _person_line_refusal(self, proposal: Proposal) -> str | None:
        path = (
            self.files.working_memory
            if proposal.file == WORKING_MEMORY
            else self.files.semantic_dir / proposal.file
        )
        for line in self.files.read(path).splitlines():
            from_person = f", {PERSON_MARK})" in line and states_any(line, [proposal.text])
            body = line.removeprefix("- ").rsplit(" (", 1)[0]
            if from_person and not self.people.asked_to_forget(body, -1):
                return (
                    "not proposed: the line comes from a person's words and no recent message of a "
                    "person asks to remove it"
                )
        return None

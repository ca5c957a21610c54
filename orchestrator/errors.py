"""What the orchestrator refuses, by kind. Domain code raises these; the HTTP layer answers each
kind with its status and the ErrorBody {"error": code, "message": message, "details": details}
(`orchestrator.api.errors`), and an agent's link answers with the same pair."""

from __future__ import annotations


class Refused(Exception):
    """A request refused: `code` names the reason for programs, `message` for people."""

    def __init__(self, code: str, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or []


class BadRequest(Refused):
    """The request itself is wrong (a path that leaves the workspace, a needless version)."""


class Forbidden(Refused):
    """Allowed to nobody, or not to this caller (a read-only file)."""


class NotFound(Refused):
    """No such agent, file, version or item."""


class Gone(Refused):
    """It existed and no longer does (an agent removed from the fleet)."""


class Conflict(Refused):
    """Refused because of the state things are in (another fleet's file)."""


class TooLarge(Refused):
    """Over a size limit or cap."""


class Invalid(Refused):
    """Well-formed, but its content is refused (a fleet file with problems, a bad file text)."""


class Failed(Refused):
    """The orchestrator could not do it (a write on the host failed)."""


class BadAnswer(Refused):
    """An agent answered with something the orchestrator cannot read."""


class Unavailable(Refused):
    """The agent that would have to answer cannot now (not connected, not waking)."""


class AgentRefused(Refused):
    """An agent's own refusal, passed on with the status it gave."""

    def __init__(self, status: int, code: str, message: str, details: list[str] | None = None) -> None:
        super().__init__(code, message, details)
        self.status = status


class RateLimited(Refused):
    """Over a rate or a quota of the caller's fair share: it may try again after `retry_after_s`."""

    def __init__(
        self, code: str, message: str, retry_after_s: float, details: list[str] | None = None
    ) -> None:
        super().__init__(code, message, details)
        self.retry_after_s = retry_after_s

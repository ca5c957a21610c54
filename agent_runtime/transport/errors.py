"""What a call from the agent to the orchestrator can fail with, whichever way it travelled."""

from __future__ import annotations


class OrchestratorError(RuntimeError):
    """A call to the orchestrator failed."""


class OrchestratorUnavailable(OrchestratorError):
    """No answer, or a 5xx: worth retrying later."""


class OrchestratorRefused(OrchestratorError):
    """A 4xx: the request itself was refused."""

    def __init__(self, status: int, code: str, message: str) -> None:
        self.status = status
        self.code = code
        super().__init__(f"HTTP {status} {code}: {message}")


class OrchestratorStorageFull(OrchestratorUnavailable):
    """A 507: the orchestrator's disk is full; the message names the path and the free bytes.
    Worth retrying once the operator has freed space."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(f"HTTP 507 insufficient_storage: {message}")

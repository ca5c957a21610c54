"""What one notification carries to its channel, whatever the channel's type."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel


class Notification(BaseModel):
    fleet: str
    agent: str
    channel: str
    text: str
    at: datetime

    @property
    def summary(self) -> str:
        """The text's first line, short enough for a subject or a title."""
        first = self.text.strip().splitlines()[0] if self.text.strip() else ""
        return first[:80]


class SendFailed(Exception):
    """One attempt did not reach the channel or was refused; the message says why (redacted by
    the caller before it is kept anywhere)."""

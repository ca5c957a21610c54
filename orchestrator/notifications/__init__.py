"""Outbound notifications (fleet.yaml `channels:`): sending a text to a webhook, a mailbox over
SMTP, Slack, Telegram or any service apprise supports, for an agent's `notify` tool and for
heartbeat rules that say `notify CHANNEL: TEXT`. Owns the table `notifications`: each one
recorded, retried with backoff, and when every attempt failed published as `notification.failed`
(which alert rules turn into an alert). Secrets are filled into a channel's settings only at the
moment of sending, never into the text or any record.

Must not import the HTTP layer (`orchestrator.api`).
"""

from orchestrator.notifications.notifier import NotificationRefused, Notifier
from orchestrator.notifications.tool import NotifyTools

__all__ = ["NotificationRefused", "Notifier", "NotifyTools"]

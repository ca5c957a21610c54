"""The `email` channel: a plain-text mail over SMTP, with aiosmtplib."""

from __future__ import annotations

from email.message import EmailMessage

from orchestrator.config.channels import EmailChannel
from orchestrator.notifications.message import Notification, SendFailed


def email_message(channel: EmailChannel, message: Notification) -> EmailMessage:
    mail = EmailMessage()
    mail["From"] = channel.from_
    mail["To"] = ", ".join(channel.to)
    subject = channel.subject.format(
        fleet=message.fleet, agent=message.agent, channel=message.channel, summary=message.summary
    )
    mail["Subject"] = " ".join(subject.split())[:200]
    mail.set_content(message.text)
    return mail


async def send_email(channel: EmailChannel, message: Notification) -> None:
    import aiosmtplib  # imported by the first mail, not at start-up

    smtp = channel.smtp
    try:
        await aiosmtplib.send(
            email_message(channel, message),
            hostname=smtp.host,
            port=smtp.port,
            use_tls=smtp.tls,
            # None: upgrade when the server offers STARTTLS; True: insist on it.
            start_tls=True if smtp.starttls else None,
            username=smtp.username,
            password=smtp.password,
            timeout=channel.timeout_s,
        )
    except (aiosmtplib.SMTPException, OSError) as failed:
        raise SendFailed(f"{type(failed).__name__}: {failed}") from None

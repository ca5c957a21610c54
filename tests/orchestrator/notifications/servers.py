"""Local stand-ins for what notifications reach: an HTTP receiver and an SMTP server, both on
127.0.0.1 (ephemeral ports), recording what they got."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from orchestrator.testing.cli import free_port


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpReceiver:
    """Answers each POST with the status set for its path (200 unless told), and keeps it."""

    statuses: dict[str, int] = field(default_factory=dict)
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(size)
                receiver.received.append(
                    Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                status = receiver.statuses.get(self.path.split("?")[0], 200)
                # A refusal echoes the request's path, as services that quote a bad request do.
                answer = b'{"ok": true}' if status < 300 else f"refused {self.path}".encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def on(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path.split("?")[0] == path]

    def start(self) -> HttpReceiver:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class _Mailbox:
    def __init__(self) -> None:
        self.mails: list[tuple[Envelope, Message]] = []

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        content = envelope.content if isinstance(envelope.content, bytes) else str(envelope.content).encode()
        self.mails.append((envelope, message_from_bytes(content)))
        return "250 OK"


class SmtpSink:
    """aiosmtpd on 127.0.0.1, keeping every mail it accepts."""

    def __init__(self) -> None:
        self._mailbox = _Mailbox()
        self.port = free_port()
        self._controller = Controller(self._mailbox, hostname="127.0.0.1", port=self.port)

    @property
    def mails(self) -> list[tuple[Envelope, Message]]:
        return self._mailbox.mails

    def start(self) -> SmtpSink:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

"""Local stand-ins for the chat platforms' HTTP APIs, on 127.0.0.1 (ephemeral ports): the parts
of Telegram's Bot API (getMe, getUpdates, sendMessage) and Slack's Web API (auth.test,
chat.postMessage) a conversation uses. People "say" things to the fakes; the fakes keep what the
bot sent back."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

import httpx


def _form_or_json(content_type: str, body: bytes) -> dict[str, Any]:
    if "json" in content_type:
        loaded = json.loads(body or b"{}")
        return loaded if isinstance(loaded, dict) else {}
    found: dict[str, Any] = {}
    for key, value in parse_qsl(body.decode()):
        try:
            found[key] = json.loads(value)
        except json.JSONDecodeError:
            found[key] = value
    return found


class _Server:
    """A threaded HTTP server whose POSTs go to `answer(path, params) -> (status, json)`."""

    def __init__(self, answer: Callable[[str, dict[str, Any], dict[str, str]], tuple[int, Any]]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                params = _form_or_json(self.headers.get("content-type", ""), self.rfile.read(size))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload = answer(self.path, params, headers)
                data = json.dumps(payload).encode()
                # A long poll cut short by its client's shutdown has nobody left to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            do_GET = do_POST

            def log_message(self, *_: object) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Sent:
    chat_id: str
    text: str
    params: dict[str, Any]


@dataclass
class FakeTelegram:
    """Telegram's Bot API for one bot token: people's messages queue as updates; the bot's
    sendMessage calls are kept in `sent`."""

    token: str
    updates: list[dict[str, Any]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._ids = itertools.count(1)
        self._messages = itertools.count(100)
        self._changed = threading.Condition()
        self._server = _Server(self._answer)

    @property
    def api_base(self) -> str:
        return f"{self._server.url}/bot"

    def start(self) -> FakeTelegram:
        self._server.start()
        return self

    def stop(self) -> None:
        with self._changed:
            self._changed.notify_all()
        self._server.stop()

    def say(self, user_id: int, name: str, text: str, chat_id: int | None = None) -> int:
        """A person's message to the bot (in a private chat unless `chat_id`); its message id."""
        message_id = next(self._messages)
        chat = chat_id if chat_id is not None else user_id
        update = {
            "update_id": next(self._ids),
            "message": {
                "message_id": message_id,
                "date": int(time.time()),
                "chat": {"id": chat, "type": "private" if chat == user_id else "group"},
                "from": {"id": user_id, "is_bot": False, "first_name": name},
                "text": text,
            },
        }
        with self._changed:
            self.updates.append(update)
            self._changed.notify_all()
        return message_id

    def replies_to(self, chat_id: int, count: int = 1, timeout_s: float = 30.0) -> list[Sent]:
        """The first `count` messages the bot sent to this chat, waiting for them."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                found = [sent for sent in self.sent if sent.chat_id == str(chat_id)]
                if len(found) >= count:
                    return found[:count]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"the bot sent {len(found)} of {count} messages to chat {chat_id}: {found}"
                    )
                self._changed.wait(left)

    def _answer(self, path: str, params: dict[str, Any], _headers: dict[str, str]) -> tuple[int, Any]:
        prefix = f"/bot{self.token}/"
        if not path.startswith(prefix):
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
        method = path[len(prefix) :].split("?", maxsplit=1)[0]
        if method == "getMe":
            bot = {"id": 4242, "is_bot": True, "first_name": "Fleet", "username": "fleet_bot"}
            return 200, {"ok": True, "result": bot}
        if method == "getUpdates":
            return 200, {"ok": True, "result": self._updates(params)}
        if method == "sendMessage":
            return 200, {"ok": True, "result": self._send(params)}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}

    def _updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        deadline = time.monotonic() + min(float(params.get("timeout") or 0), 2.0)
        with self._changed:
            while True:
                waiting = [u for u in self.updates if u["update_id"] >= offset]
                left = deadline - time.monotonic()
                if waiting or left <= 0:
                    return waiting
                self._changed.wait(left)

    def _send(self, params: dict[str, Any]) -> dict[str, Any]:
        with self._changed:
            self.sent.append(Sent(str(params["chat_id"]), str(params["text"]), params))
            self._changed.notify_all()
        return {
            "message_id": next(self._messages),
            "date": int(time.time()),
            "chat": {"id": int(params["chat_id"]), "type": "private"},
            "from": {"id": 4242, "is_bot": True, "first_name": "Fleet"},
            "text": params["text"],
        }


def slack_headers(signing_secret: str, body: bytes, at: float | None = None) -> dict[str, str]:
    """The headers Slack signs an Events API request with (v0, HMAC-SHA256 over time and body)."""
    stamp = str(int(time.time() if at is None else at))
    digest = hmac.new(signing_secret.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256)
    return {
        "content-type": "application/json",
        "x-slack-request-timestamp": stamp,
        "x-slack-signature": f"v0={digest.hexdigest()}",
    }


@dataclass
class FakeSlack:
    """Slack's Web API for one bot token (`sent` keeps chat.postMessage calls), and a sender of
    Events API requests signed as Slack signs them."""

    token: str
    signing_secret: str
    sent: list[Sent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
        self._server = _Server(self._answer)
        self._events = itertools.count(1)

    @property
    def api_base(self) -> str:
        return f"{self._server.url}/api/"

    def start(self) -> FakeSlack:
        self._server.start()
        return self

    def stop(self) -> None:
        self._server.stop()

    def signed(self, body: bytes, at: float | None = None) -> dict[str, str]:
        return slack_headers(self.signing_secret, body, at)

    def message_event(
        self, user: str, text: str, channel: str = "C1", ts: str = "1700000000.000100"
    ) -> bytes:
        event = {"type": "message", "user": user, "text": text, "channel": channel, "ts": ts}
        payload = {"type": "event_callback", "event_id": f"Ev{next(self._events)}", "event": event}
        return json.dumps(payload).encode()

    def post_event(self, url: str, body: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
        return httpx.post(url, content=body, headers=headers or self.signed(body), timeout=10)

    def replies_in(self, channel: str, count: int = 1, timeout_s: float = 30.0) -> list[Sent]:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                found = [sent for sent in self.sent if sent.chat_id == channel]
                if len(found) >= count:
                    return found[:count]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"the app sent {len(found)} of {count} messages to {channel}: {found}"
                    )
                self._changed.wait(left)

    def _answer(self, path: str, params: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        if headers.get("authorization") != f"Bearer {self.token}":
            return 200, {"ok": False, "error": "invalid_auth"}
        method = path.split("/api/", 1)[-1].split("?", maxsplit=1)[0]
        if method == "chat.postMessage":
            with self._changed:
                self.sent.append(Sent(str(params.get("channel")), str(params.get("text")), params))
                self._changed.notify_all()
            return 200, {"ok": True, "channel": params.get("channel"), "ts": f"{time.time():.6f}"}
        if method == "auth.test":
            return 200, {"ok": True, "user_id": "UBOT"}
        return 200, {"ok": False, "error": "unknown_method"}

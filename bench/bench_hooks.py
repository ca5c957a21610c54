"""Hooks and notifications, in process on real SQLite and real HTTP over loopback.

1. A signed GitHub-style request (8 KiB of JSON) through `HookReceiver.receive`: signature,
   replay memory, rendering and the inbox item; per-request latency, p50 and p99.
2. A forged request (wrong signature): what refusing it costs, p50.
3. `Notifier.notify` to a webhook channel served by a local HTTP server: one POST per
   notification, recorded, an event and a run record; p50 and p99.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from orchestrator.broker import Inbox  # noqa: E402
from orchestrator.config.loader import load_fleet  # noqa: E402
from orchestrator.events import EventBus  # noqa: E402
from orchestrator.fleet.view import FleetView  # noqa: E402
from orchestrator.hooks import HookReceiver, HookRefused, HookRequest  # noqa: E402
from orchestrator.hooks.signatures import github_signature  # noqa: E402
from orchestrator.hooks.store import HookStore  # noqa: E402
from orchestrator.lifecycle import Controls  # noqa: E402
from orchestrator.notifications import Notifier  # noqa: E402
from orchestrator.state.db import Database  # noqa: E402

Row = dict[str, str]
BENCH = "hooks"
SECRET = secrets.token_hex(16)
FLEET = """\
version: 1
fleet: benchhooks
secrets:
  hook_secret: {{file: secret.txt}}
channels:
  ops: {{type: webhook, url: "{url}/notify", max_per_hour: 3600}}
hooks:
  github: {{agent: reviewer, secret: hook_secret, signature: github, max_per_minute: 6000}}
agents:
  reviewer:
    model: test
    channels: [ops]
"""


class _Quiet(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        return


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": BENCH, "metric": metric, "value": value, "target": target}


def _ms(samples: list[float], q: float) -> str:
    ordered = sorted(samples)
    return f"{1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]:.2f} ms"


def _request(n: int, secret: str) -> HookRequest:
    body = json.dumps({"action": "opened", "number": n, "padding": "x" * 8000}).encode()
    headers = {
        "x-hub-signature-256": github_signature(secret, body),
        "x-github-event": "pull_request",
        "x-github-delivery": f"bench-{n}",
        "content-type": "application/json",
    }
    return HookRequest(hook="github", headers=headers, body=body)


def run(quick: bool) -> list[Row]:
    count = 100 if quick else 500
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            (root / "secret.txt").write_text(SECRET)
            (root / "fleet.yaml").write_text(FLEET.format(url=f"http://127.0.0.1:{server.server_address[1]}"))
            fleet = FleetView(load_fleet(root / "fleet.yaml"))
            db = Database(root / "state.db")
            events = EventBus(db)
            inbox = Inbox(db, events, Controls(db), fleet)
            receiver = HookReceiver(fleet, inbox, events, HookStore(db))
            accepted = []
            for n in range(count):
                request = _request(n, SECRET)
                started = time.perf_counter()
                receiver.receive(request)
                accepted.append(time.perf_counter() - started)
            forged = []
            for n in range(count):
                request = _request(count + n, "not-the-secret")
                started = time.perf_counter()
                try:
                    receiver.receive(request)
                except HookRefused:
                    forged.append(time.perf_counter() - started)
            notifier = Notifier(fleet, db, events)
            sent = asyncio.run(_notify(notifier, count // 2))
    finally:
        server.shutdown()
        server.server_close()
    return [
        _row("signed hook request to inbox item (8 KiB JSON), p50", _ms(accepted, 0.5)),
        _row("signed hook request to inbox item (8 KiB JSON), p99", _ms(accepted, 0.99)),
        _row("forged hook request refused (401), p50", _ms(forged, 0.5)),
        _row("notify to a local webhook channel, p50", _ms(sent, 0.5)),
        _row("notify to a local webhook channel, p99", _ms(sent, 0.99)),
        _row("requests per measurement", str(count)),
    ]


async def _notify(notifier: Notifier, count: int) -> list[float]:
    samples = []
    for n in range(count):
        started = time.perf_counter()
        record = await notifier.notify("reviewer", "ops", f"build {n} failed")
        assert record.status == "sent", record.last_error
        samples.append(time.perf_counter() - started)
    return samples


if __name__ == "__main__":
    for row in run(quick="--quick" in sys.argv):
        print(f"{row['metric']}: {row['value']}")

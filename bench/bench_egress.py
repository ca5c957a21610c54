"""The cost of the http_request tool: an allowed GET made by the orchestrator for an agent (the
agent's POST /agent/v1/tools/call, policy checks, the request to the site, the answer) against
the same GET sent straight to the site, p50 of each in one run. The tool opens a connection per
request (to the address it checked), so the direct GET is measured both over a kept-alive
connection and over a new one each time.

Everything runs on loopback: the site is a local server on 127.0.0.1, the fleet uses the
in-memory test backend, and the agent's side is a plain HTTP client holding the agent's token.
"""

from __future__ import annotations

import http.client
import socket
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from orchestrator.api.app import create_app
from orchestrator.config.loader import load_fleet
from orchestrator.services import Services
from orchestrator.testing.fake_backend import FakeBackend
from orchestrator.testing.server import serve_app
from orchestrator.wiring import build_services

Row = dict[str, str]
BODY = b'{"items": [' + b",".join(b'{"id": %d, "title": "release note"}' % i for i in range(40)) + b"]}"


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "egress", "metric": metric, "value": value, "target": target}


class _Site(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes: without this, loopback's delayed ACK (some 40 ms)
        # would be measured instead of the tool.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


def _fleet(root: Path, port: int) -> Services:
    (root / "fleet.yaml").write_text(
        "version: 1\nfleet: benchegress\nagents:\n  researcher:\n    role: fetches\n    tools:\n"
        f'      http: {{allow: ["http://127.0.0.1:{port}/"], allow_private: true, requests_per_day: 1000000}}\n'
    )
    services = build_services(load_fleet(root / "fleet.yaml"), FakeBackend())
    services.manager.apply()
    return services


def _timed(send: object, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        started = time.perf_counter()
        send()  # type: ignore[operator]
        samples.append(time.perf_counter() - started)
    return samples


def _ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.2f} ms"


def run(quick: bool) -> list[Row]:
    count = 100 if quick else 500
    site = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    port = int(site.server_address[1])
    url = f"http://127.0.0.1:{port}/data"
    try:
        with tempfile.TemporaryDirectory(prefix="flt-bench-egress-") as tmp:
            services = _fleet(Path(tmp), port)
            token = services.tokens.mint("researcher")
            with serve_app(create_app(services)) as base, httpx.Client(timeout=30) as client:
                call = {"name": "http_request", "arguments": {"method": "GET", "url": url}}
                headers = {"authorization": f"Bearer {token}"}

                def through() -> None:
                    answer = client.post(f"{base}/agent/v1/tools/call", json=call, headers=headers)
                    answer.raise_for_status()
                    assert answer.json()["output"].startswith("HTTP 200"), answer.text

                def direct() -> None:
                    client.get(url).raise_for_status()

                def direct_fresh() -> None:  # a new connection each time, as the tool opens one
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    try:
                        connection.request("GET", "/data")
                        answer = connection.getresponse()
                        answer.read()
                        assert answer.status == 200
                    finally:
                        connection.close()

                _timed(through, 10)  # warm: imports, connections
                _timed(direct, 10)
                # Interleaved rounds, so that a change of the machine's load hits both alike.
                via: list[float] = []
                straight: list[float] = []
                fresh: list[float] = []
                for _ in range(count // 50):
                    via += _timed(through, 50)
                    straight += _timed(direct, 50)
                    fresh += _timed(direct_fresh, 50)
            services.db.close()
    finally:
        site.shutdown()
        site.server_close()
    overhead = statistics.median(via) - statistics.median(straight)
    over_fresh = statistics.median(via) - statistics.median(fresh)
    return [
        _row(f"GET through the orchestrator (http_request, p50 of {len(via)})", _ms(via)),
        _row(f"GET straight to the site, kept-alive connection (p50 of {len(straight)})", _ms(straight)),
        _row(f"GET straight to the site, new connection each (p50 of {len(fresh)})", _ms(fresh)),
        _row(
            "overhead of http_request against the kept-alive GET (p50 difference)",
            f"{overhead * 1000:.2f} ms",
            "< 20 ms",
        ),
        _row(
            "overhead of http_request against the new-connection GET (p50 difference)",
            f"{over_fresh * 1000:.2f} ms",
            "",
        ),
    ]


if __name__ == "__main__":
    for result in run(quick=True):
        print(result)

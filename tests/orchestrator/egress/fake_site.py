"""A local web site on 127.0.0.1 (an ephemeral port) that records what reaches it."""

from __future__ import annotations

import base64
import functools
import json
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, urlsplit

PAGE = """<html><head><title>Release notes</title><script>var tracking = 1;</script></head>
<body><nav>Home | About</nav><article><h1>Release 2.4</h1>
<p>Version 2.4 adds streaming exports and fixes the scheduler drift seen under load.</p>
<p>Upgrading needs no migration; the previous settings keep working unchanged.</p>
</article><footer>Copyright</footer></body></html>"""


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeSite:
    server: ThreadingHTTPServer
    seen: list[Seen] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_site() -> FakeSite:
    site: FakeSite

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            site.seen.append(
                Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
            parts = urlsplit(self.path)
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            if parts.path == "/redirect":
                self._send(int(query.get("status", "302")), b"", location=query["to"])
            elif parts.path == "/echo":
                echoed = {
                    "method": self.command,
                    "headers": dict(self.headers.items()),
                    "body": body.decode(),
                }
                self._send(200, json.dumps(echoed).encode(), "application/json")
            elif parts.path == "/reflect":
                reflected = reflect(self.headers.get("x-key") or query.get("key", ""), query)
                self._send(200, reflected.encode(), query.get("type", "text/plain"))
            elif parts.path == "/auth":
                self._send(200, f"you sent: {self.headers.get('authorization')}".encode(), "text/plain")
            elif parts.path == "/bomb":
                self._send(200, bomb(), "text/plain", encoding="gzip")
            elif parts.path == "/big":
                self._send(200, b"x" * int(query.get("size", "100000")), "text/plain")
            elif parts.path == "/slow":
                time.sleep(float(query.get("s", "5")))
                self._send(200, b"late", "text/plain")
            elif parts.path == "/page.html":
                self._send(200, PAGE.encode(), "text/html; charset=utf-8")
            elif parts.path == "/feed.xml":
                self._send(200, FEED.encode(), "application/rss+xml")
            else:
                self._send(
                    200, json.dumps({"path": parts.path, "items": [1, 2, 3]}).encode(), "application/json"
                )

        def _send(
            self, status: int, body: bytes, content_type: str = "", location: str = "", encoding: str = ""
        ) -> None:
            self.send_response(status)
            if encoding:
                self.send_header("Content-Encoding", encoding)
            if content_type:
                self.send_header("Content-Type", content_type)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    site = FakeSite(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return site


FEED = """<?xml version="1.0"?><rss version="2.0"><channel><title>Releases</title>
<item><title>2.4 streaming exports</title></item><item><title>2.3 scheduler fix</title></item>
</channel></rss>"""


@functools.cache
def bomb() -> bytes:
    """128 MiB of zeros, gzipped (to some 130 KiB) a MiB at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * (1024 * 1024)
    return b"".join(packer.compress(zeros) for _ in range(128)) + packer.flush()


def reflect(value: str, query: dict[str, str]) -> str:
    """A server that echoes what it was sent: `pad` characters, then the value in the encoding
    `enc` (raw, base64 after `lead` bytes, url, hex)."""
    encoding = query.get("enc", "raw")
    raw = value.encode()
    if encoding == "base64":
        encoded = base64.b64encode(query.get("lead", "").encode() + raw).decode()
    elif encoding == "url":
        encoded = quote(value, safe="")
    elif encoding == "hex":
        encoded = raw.hex()
    else:
        encoded = value
    return "p" * int(query.get("pad", "0")) + encoded + " and the rest of the page"

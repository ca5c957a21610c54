"""Local web pages for the browser's tests, served on 127.0.0.1 (an ephemeral port), recording
every request that reaches them."""

from __future__ import annotations

import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from cryptography.hazmat.primitives.asymmetric import ec

from orchestrator.browser.interception import certificate_chain

JS_PAGE = """<html><head><title>Written later</title></head><body><div id="out"></div>
<script>document.getElementById('out').textContent = 'rendered by script ' + (6 * 7);
document.title = 'Rendered';</script></body></html>"""

LOGIN_PAGE = """<html><head><title>Sign in</title></head><body>
<form method="POST" action="/login"><label>User <input name="user"></label>
<label>Password <input name="password" type="password"></label>
<button type="submit">Sign in</button></form><p id="echo"></p><script>
document.querySelector('[name=password]').addEventListener('input',
  (e) => { document.getElementById('echo').textContent = 'you typed ' + e.target.value; });
</script></body></html>"""

NEVER_ENDING = "/never"

# Fetches each address of ?targets= (comma separated) and writes what happened into the page.
FETCHER_PAGE = """<html><head><title>Fetcher</title></head><body><pre id="out">running</pre><script>
const targets = new URLSearchParams(location.search).get('targets').split(',');
Promise.all(targets.map((t) => fetch(t, {mode: 'no-cors'}).then((r) => t + ' -> answered ' + r.status,
  (e) => t + ' -> failed'))).then((lines) => { document.getElementById('out').textContent = lines.join('\\n');
  document.title = 'Fetched'; });
</script></body></html>"""

# Tries the browser's DevTools endpoint on the sandbox's loopback, by fetch and by WebSocket.
CDP_PROBE_PAGE = """<html><head><title>Probe</title></head><body><script>
const out = [];
const done = () => { for (const line of out) { const p = document.createElement('p'); p.textContent = line;
  document.body.appendChild(p); } document.title = 'Probed'; };
const probes = ['http://127.0.0.1:9222/json/version', 'http://localhost:9222/json/list',
                'http://127.0.0.1:9223/json/version'].map((u) =>
  fetch(u).then((r) => r.text()).then((t) => out.push(u + ' READ ' + t.slice(0, 80)), () => out.push(u + ' blocked')));
const socket = new Promise((resolve) => {
  const ws = new WebSocket('ws://127.0.0.1:9222/devtools/browser');
  ws.onopen = () => { out.push('websocket OPEN'); resolve(); };
  ws.onerror = () => { out.push('websocket blocked'); resolve(); };
});
Promise.all([...probes, socket]).then(done);
</script></body></html>"""

# Allocates memory without end.
MEMORY_PAGE = """<html><head><title>Hungry</title></head><body><script>
const kept = [];
function grow() { for (let i = 0; i < 20; i++) kept.push(new Float64Array(1 << 20).fill(Math.random())); setTimeout(grow, 0); }
grow();
</script>eating</body></html>"""


@dataclass
class Seen:
    method: str
    path: str
    body: bytes


@dataclass
class LocalSite:
    """A web site on loopback; `pages` maps a path to its HTML."""

    server: ThreadingHTTPServer
    pages: dict[str, str]
    seen: list[Seen] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    scheme: str = "http"
    hosts: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "/") -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def paths(self) -> list[str]:
        return [seen.path for seen in self.seen]

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


def start_site(
    pages: dict[str, str] | None = None, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None
) -> LocalSite:
    """The site over HTTP, or over HTTPS with `tls` (a server context holding its certificate)."""
    site: LocalSite

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            site.seen.append(Seen(self.command, self.path, body))
            site.hosts.append(self.headers.get("host", ""))
            parts = urlsplit(self.path)
            query = {key: values[0] for key, values in parse_qs(parts.query).items()}
            if parts.path == "/redirect":
                self._send(302, b"", location=query["to"])
            elif parts.path == "/login":
                self._send(200, b"<html><title>Welcome</title><body>signed in</body></html>")
            elif parts.path == NEVER_ENDING:
                self._never_ending()
            elif parts.path in site.pages:
                self._send(200, site.pages[parts.path].encode())
            else:
                self._send(404, b"not here")

        def _send(self, status: int, body: bytes, location: str | None = None) -> None:
            self.send_response(status)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            if location:
                self.send_header("location", location)
            self.end_headers()
            self.wfile.write(body)

        def _never_ending(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(b"<html><head><title>Forever</title></head><body>")
            while not site.stop.wait(0.5):
                try:
                    self.wfile.write(b"<p>more</p>")
                    self.wfile.flush()
                except OSError:
                    return
            time.sleep(0)

        do_GET = _answer
        do_POST = _answer

    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    site = LocalSite(server, dict(pages or {}), scheme="https" if tls else "http")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return site


@dataclass
class Listener:
    """A bare TCP listener that only counts the connections reaching it."""

    server: ThreadingHTTPServer
    hits: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_listener(host: str = "127.0.0.1") -> Listener:
    listener: Listener

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            listener.hits.append(self.path)
            self.send_response(200)
            self.send_header("access-control-allow-origin", "*")
            self.send_header("content-length", "6")
            self.end_headers()
            self.wfile.write(b"leaked")

        do_POST = do_GET

    server = ThreadingHTTPServer((host, 0), Handler)
    server.daemon_threads = True
    listener = Listener(server)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return listener


@dataclass(frozen=True)
class SiteKey:
    """A local HTTPS site's key: `server` serves its certificate, `trusted` verifies it."""

    server: ssl.SSLContext
    trusted: ssl.SSLContext


def make_site_key(folder: Path) -> SiteKey:
    """A certificate for 127.0.0.1, signed by its own key."""
    chain = folder / "site.pem"
    chain.write_bytes(certificate_chain(ec.generate_private_key(ec.SECP256R1()), "127.0.0.1"))
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(chain)
    return SiteKey(server, ssl.create_default_context(cafile=chain))

"""The browser tools' costs, on a local JavaScript page served on 127.0.0.1:

- browser_navigate p50/p95, cold (each on a new sandbox: network, container, Chromium, CDP) and
  warm (the same session), against Chromium run directly on the host on the same page
  (`chromium --headless --dump-dom`, a new process each time: the limit);
- the memory of one sandbox with the page loaded (the container's cgroup, as Docker reports it);
- 10 agents browsing at once (10 sandboxes opened together, then each navigates 3 times);
- the egress proxy's overhead per request: a GET through it against the same GET sent directly,
  over HTTP and over HTTPS (the proxy ending the client's TLS and opening its own to the site).

Needs Docker and the browser image (`flotilla image build --browser`); nothing leaves loopback
and the sandboxes' own networks.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from cryptography.hazmat.primitives.asymmetric import ec

from agent_runtime.protocol import OrchestratorToolCall
from orchestrator.backends.docker import connect_docker
from orchestrator.browser import BrowserContextParts, BrowserSessions, BrowserTools
from orchestrator.browser.image import ensure_browser_image
from orchestrator.browser.interception import Interception, certificate_chain
from orchestrator.browser.proxy import EgressProxy, ProxyLog
from orchestrator.browser.screenshots import ScreenshotPlace, ScreenshotShelf
from orchestrator.config.tools import ToolsConfig
from orchestrator.events import EventBus
from orchestrator.images.build import default_repo_root
from orchestrator.secrets import SecretStore
from orchestrator.state.db import Database

Row = dict[str, str]
PAGE = b"""<html><head><title>Bench</title></head><body><ul id="list"></ul><script>
const list = document.getElementById('list');
for (let i = 0; i < 200; i++) { const li = document.createElement('li'); li.textContent = 'row ' + i; list.appendChild(li); }
document.title = 'Rendered';</script></body></html>"""
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _row(metric: str, value: str, target: str = "") -> Row:
    return {"benchmark": "browser", "metric": metric, "value": value, "target": target}


class _Site(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered) * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms (n={len(ordered)})"


class _Agents:
    def __init__(self, root: Path, image: str, url: str, count: int) -> None:
        self.db = Database(root / "state.db")
        self.sessions = BrowserSessions(self.db, connect_docker)
        tools = ToolsConfig.model_validate(
            {
                "http": {"allow": [{"url": url, "allow_private": True}], "requests_per_day": 100_000},
                "browser": {},
            }
        )
        assert tools.http is not None and tools.browser is not None
        shelf = ScreenshotShelf(ScreenshotPlace(lambda agent: root / "agents" / agent, {}))
        self.tools = [
            BrowserTools(
                BrowserContextParts(
                    fleet="bench-browser",
                    agent=f"agent{n}",
                    image=image,
                    http=tools.http,
                    browser=tools.browser,
                    sessions=self.sessions,
                    secrets=SecretStore({}, root, {}),
                    events=EventBus(self.db),
                    screenshots=shelf,
                )
            )
            for n in range(count)
        ]

    async def navigate(self, agent: int, url: str, item: str = "bench") -> float:
        started = time.perf_counter()
        call = OrchestratorToolCall(name="browser_navigate", arguments={"url": url}, item_id=item)
        result = await self.tools[agent].call(call)
        if not result.ok or "Rendered" not in result.output:
            raise RuntimeError(f"navigate failed: {result.output[:300]}")
        return time.perf_counter() - started


async def _cold_and_warm(
    agents: _Agents, url: str, cold_n: int, warm_n: int
) -> tuple[list[float], list[float], int]:
    cold = []
    for n in range(cold_n):
        await agents.sessions.close_agent("agent0")  # outside the timing: each navigate opens a sandbox
        cold.append(await agents.navigate(0, url, item=f"cold-{n}"))
    warm = [await agents.navigate(0, url, item=f"cold-{cold_n - 1}") for _ in range(warm_n)]
    key = ("agent0", f"cold-{cold_n - 1}", "main")
    memory = await asyncio.to_thread(agents.sessions.memory_used, key)
    await agents.sessions.close_all()
    return cold, warm, memory


async def _together(agents: _Agents, url: str, rounds: int) -> tuple[float, list[float], list[str]]:
    """Every agent opens its sandbox and navigates `rounds` times, all at once; the wall time,
    each navigate's time, and the failures (a sandbox not up in time on a loaded machine)."""
    started = time.perf_counter()
    failures: list[str] = []

    async def browse(agent: int) -> list[float]:
        try:
            return [await agents.navigate(agent, url) for _ in range(rounds)]
        except RuntimeError as failed:
            failures.append(str(failed)[:120])
            return []

    per_agent = await asyncio.gather(*(browse(n) for n in range(len(agents.tools))))
    wall = time.perf_counter() - started
    await agents.sessions.close_all()
    return wall, [sample for samples in per_agent for sample in samples], failures


def _dump_dom(url: str, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        with tempfile.TemporaryDirectory() as profile:
            started = time.perf_counter()
            done = subprocess.run(
                ["/usr/bin/chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
                capture_output=True,
                timeout=60,
                check=False,
            )
            samples.append(time.perf_counter() - started)
        if b"row 199" not in done.stdout:
            raise RuntimeError("chromium --dump-dom did not render the page")
    return samples


async def _proxy_overhead(
    url: str, n: int, site_tls: ssl.SSLContext | None = None
) -> tuple[list[float], list[float]]:
    """GETs sent directly and through the proxy, alternately; over HTTPS when `site_tls` (a
    context trusting the site) is given: the proxy then intercepts, as for the sandboxes."""
    tools = ToolsConfig.model_validate({"http": {"allow": [{"url": url, "allow_private": True}]}})
    assert tools.http is not None

    async def admit() -> None:
        return None

    interception = Interception() if site_tls is not None else None
    proxy = EgressProxy(
        tools.http,
        _loopback,
        admit,
        client="127.0.0.1",
        record=ProxyLog(),
        interception=interception,
        upstream_tls=site_tls,
    )
    port = await proxy.start("127.0.0.1")
    direct: list[float] = []
    proxied: list[float] = []
    limits = httpx.Limits(max_keepalive_connections=0)  # the proxy opens a connection per request
    # The client stands in for Chromium, which accepts the proxy's key by its hash.
    verify: ssl.SSLContext | bool = site_tls if site_tls is not None else True
    try:
        async with (
            httpx.AsyncClient(trust_env=False, limits=limits, verify=verify) as plain,
            httpx.AsyncClient(
                proxy=f"http://127.0.0.1:{port}", trust_env=False, limits=limits, verify=False
            ) as through,
        ):
            for client, samples in ((plain, direct), (through, proxied)) * n:
                started = time.perf_counter()
                (await client.get(url)).raise_for_status()
                samples.append(time.perf_counter() - started)
    finally:
        await proxy.close()
    return direct, proxied


async def _loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


def _tls_site(folder: Path) -> tuple[ThreadingHTTPServer, ssl.SSLContext]:
    """The page over HTTPS on loopback, with a certificate of its own; a context trusting it."""
    chain = folder / "site.pem"
    chain.write_bytes(certificate_chain(ec.generate_private_key(ec.SECP256R1()), "127.0.0.1"))
    serving = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    serving.load_cert_chain(chain)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    server.daemon_threads = True
    server.socket = serving.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, ssl.create_default_context(cafile=chain)


def _https_rows(folder: Path, n: int) -> list[Row]:
    server, trusted = _tls_site(folder)
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}/page"
        direct, proxied = asyncio.run(_proxy_overhead(url, n, trusted))
    finally:
        server.shutdown()
        server.server_close()
    overhead = (statistics.median(proxied) - statistics.median(direct)) * 1000
    return [
        _row("HTTPS GET direct (new connection each)", _ms(direct)),
        _row(
            "HTTPS GET through the egress proxy, intercepted (TLS ended and opened again)",
            f"{_ms(proxied)}; overhead p50 {overhead:.2f} ms",
        ),
    ]


def run(quick: bool) -> list[Row]:
    image = ensure_browser_image(default_repo_root()).tag
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/page"
    cold_n, warm_n, dump_n, together, rounds = (3, 10, 3, 10, 2) if quick else (8, 30, 8, 10, 3)
    rows: list[Row] = []
    try:
        with tempfile.TemporaryDirectory() as root:
            agents = _Agents(Path(root), image, url, together)
            cold, warm, memory = asyncio.run(_cold_and_warm(agents, url, cold_n, warm_n))
            rows.append(_row("browser_navigate, cold (new sandbox each time)", _ms(cold)))
            rows.append(_row("browser_navigate, warm (same session)", _ms(warm)))
            rows.append(
                _row(
                    "chromium --headless --dump-dom on the host (new process each time)",
                    _ms(_dump_dom(url, dump_n)),
                )
            )
            rows.append(
                _row(
                    "memory of one sandbox with the page loaded", f"{memory / 2**20:.0f} MiB", "< 768 MiB cap"
                )
            )
            wall, samples, failures = asyncio.run(
                _together(_Agents(Path(root), image, url, together), url, rounds)
            )
            failed = f"; {len(failures)} of {together} failed: {failures[0]}" if failures else ""
            rows.append(
                _row(
                    f"{together} agents browsing at once ({rounds} navigations each, sandboxes opened together)",
                    f"wall {wall:.1f} s; per navigate {_ms(samples) if samples else '-'}{failed}",
                )
            )
            direct, proxied = asyncio.run(_proxy_overhead(url, 30 if quick else 200))
            overhead = (statistics.median(proxied) - statistics.median(direct)) * 1000
            rows.append(_row("GET direct (new connection each)", _ms(direct)))
            rows.append(
                _row("GET through the egress proxy", f"{_ms(proxied)}; overhead p50 {overhead:.2f} ms")
            )
            rows.extend(_https_rows(Path(root), 30 if quick else 200))
    finally:
        server.shutdown()
        server.server_close()
    return rows

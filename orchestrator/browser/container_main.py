"""The program of the browser sandbox container (stdlib only, copied into the browser image).

Starts headless Chromium with its DevTools endpoint on the container's loopback (Chromium binds
nothing else), every page request sent to the orchestrator's egress proxy (loopback included:
`<-loopback>` removes Chromium's implicit bypass, so a page cannot reach the DevTools port), and
relays one TCP port to that endpoint for the orchestrator only: a connection from any other
address is closed unread.

Environment: FLOTILLA_PROXY (host:port of the egress proxy), FLOTILLA_PROXY_KEY (the SPKI hash of
the key the proxy answers HTTPS with, so that it can check each request inside), FLOTILLA_CONTROLLER
(the one address allowed on the relay), FLOTILLA_RELAY_PORT, FLOTILLA_WINDOW (WIDTHxHEIGHT).
"""

import asyncio
import contextlib
import os
import signal
import subprocess
import sys

DEVTOOLS_PORT = 9222
CHUNK = 65536


def chromium_command(proxy: str, window: str, proxy_key: str) -> list[str]:
    return [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-breakpad",
        "--no-first-run",
        "--no-default-browser-check",
        # Chromium's own calls home (sign-in, safe browsing, hints, translation, metrics): off,
        # so that the proxy sees only what pages ask for.
        "--disable-client-side-phishing-detection",
        "--disable-component-extensions-with-background-pages",
        "--disable-field-trial-config",
        "--disable-search-engine-choice-screen",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication,"
        "InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater,DialMediaRouteProvider,"
        "OptimizationGuideModelDownloading,SafeBrowsingEnhancedProtection,NetworkTimeServiceQuerying",
        "--metrics-recording-only",
        "--no-pings",
        "--safebrowsing-disable-auto-update",
        "--password-store=basic",
        "--use-mock-keychain",
        "--no-service-autorun",
        "--user-data-dir=/tmp/profile",
        f"--proxy-server=http://{proxy}",
        "--proxy-bypass-list=<-loopback>",
        # Certificates with the proxy's key are accepted (it verifies the sites' own); only
        # HTTP/1.1 inside tunnels, one request each, so that the proxy sees every request.
        f"--ignore-certificate-errors-spki-list={proxy_key}",
        "--disable-http2",
        "--disable-quic",
        # WebRTC would otherwise send UDP straight to any address: only through the proxy (TCP).
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",
        f"--window-size={window.replace('x', ',')}",
        f"--remote-debugging-port={DEVTOOLS_PORT}",
        "about:blank",
    ]


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(CHUNK):
            writer.write(chunk)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()


async def relay(controller: str, client_reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
    peer = client.get_extra_info("peername")
    if not peer or peer[0] != controller:
        client.close()
        return
    try:
        upstream_reader, upstream = await asyncio.open_connection("127.0.0.1", DEVTOOLS_PORT)
    except OSError:
        client.close()
        return
    await asyncio.gather(pipe(client_reader, upstream), pipe(upstream_reader, client))


async def main() -> int:
    proxy = os.environ["FLOTILLA_PROXY"]
    controller = os.environ["FLOTILLA_CONTROLLER"]
    port = int(os.environ.get("FLOTILLA_RELAY_PORT", "9223"))
    window = os.environ.get("FLOTILLA_WINDOW", "1280x800")
    proxy_key = os.environ.get("FLOTILLA_PROXY_KEY", "")
    browser = subprocess.Popen(chromium_command(proxy, window, proxy_key), stdin=subprocess.DEVNULL)
    server = await asyncio.start_server(lambda r, w: relay(controller, r, w), host="0.0.0.0", port=port)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with server:
        while not stop.is_set() and browser.poll() is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)
    browser.terminate()
    return browser.wait(timeout=5) or 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

"""A release feed on 127.0.0.1 for the feed-digest example: `python3 serve_feed.py [PORT]`.

It answers GET /feed.xml when the request carries `Authorization: Bearer $FEED_TOKEN`, and logs
the path of each request, so that one can watch the orchestrator (never the agent) fetch it.
"""

from __future__ import annotations

import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FEED = """<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Harbour releases</title>
<item><title>2.4.0: streaming exports</title><pubDate>Tue, 01 Dec 2026 09:00:00 GMT</pubDate></item>
<item><title>2.3.2: scheduler drift under load fixed</title><pubDate>Fri, 20 Nov 2026 16:30:00 GMT</pubDate></item>
<item><title>2.3.1: memory use of idle agents halved</title><pubDate>Mon, 09 Nov 2026 11:15:00 GMT</pubDate></item>
</channel></rss>
"""


class FeedHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        expected = f"Bearer {os.environ.get('FEED_TOKEN', '')}"
        if self.path != "/feed.xml":
            self._answer(404, b"not found\n", "text/plain")
        elif self.headers.get("Authorization") != expected:
            self._answer(401, b"a bearer token is needed\n", "text/plain")
        else:
            self._answer(200, FEED.encode(), "application/rss+xml; charset=utf-8")

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 18790
    server = ThreadingHTTPServer(("127.0.0.1", port), FeedHandler)
    print(f"serving the feed on http://127.0.0.1:{port}/feed.xml", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

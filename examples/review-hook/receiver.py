"""A local stand-in for the team's review room: prints every notification it receives.

python3 examples/review-hook/receiver.py      # listens on 127.0.0.1:18791
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, HTTPServer


class Room(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        print(f"[{body.get('channel')}] {body.get('agent')}: {body.get('text')}", flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        return


if __name__ == "__main__":
    HTTPServer(("127.0.0.1", 18791), Room).serve_forever()

"""A real MCP server over streamable HTTP (the official SDK's MCPServer) that demands a bearer token.

Run as `python search_server.py PORT TOKEN SEEN_FILE`: it serves /mcp on 127.0.0.1:PORT, answers
401 to any request without `Authorization: Bearer TOKEN`, and appends each token it accepted to
SEEN_FILE (so a test can tell the token reached the server).
"""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

server = MCPServer("search")


@server.tool()
def find(query: str) -> str:
    """Find the harbour documents that mention the query."""
    return f"3 documents mention {query!r}: tide-tables.md, moorings.md, fees.md"


@server.tool()
def drop_index() -> str:
    """Delete the whole search index (never allowed to agents)."""
    return "index dropped"


class RequireBearer:
    def __init__(self, app: ASGIApp, token: str, seen: Path) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"authorization", b"")
            if given != self.expected:
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"bearer token required"})
                return
            with self.seen.open("a") as out:
                out.write(given.decode().removeprefix("Bearer ") + "\n")
        await self.app(scope, receive, send)


def main() -> None:
    port, token, seen = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    app = RequireBearer(server.streamable_http_app(), token, seen)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()

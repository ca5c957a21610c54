"""The CLI's HTTP client for a running orchestrator.

A running orchestrator writes `.flotilla/endpoint.json` (mode 0600) with its loopback URL and
the operator token; the CLI reads it from next to the fleet file it is given.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_runtime import iter_sse
from orchestrator.cli.errors import BadInput, CliError, NotRunning
from orchestrator.state.endpoint import Endpoint, read_endpoint
from orchestrator.state.paths import StatePaths

if TYPE_CHECKING:
    import httpx


def _httpx() -> Any:
    """httpx, imported on the first request: `up -d` reaches its fork sooner without it (see
    orchestrator.cli.main for the part of it that is never loaded)."""
    import httpx

    return httpx


# Error codes of the API that name a wrong argument of the command (exit code 2).
WRONG_ARGUMENT = frozenset({"unknown_agent"})


class ApiClient:
    def __init__(self, endpoint: Endpoint, timeout_s: float = 30.0) -> None:
        self.endpoint = endpoint
        httpx = _httpx()
        self._http = httpx.Client(
            base_url=endpoint.url,
            headers={"authorization": f"Bearer {endpoint.token}"},
            timeout=timeout_s,
            # The orchestrator's API is plain HTTP on loopback: no trust store to load.
            verify=endpoint.url.startswith("https:"),
        )

    @classmethod
    def from_fleet_file(cls, fleet_file: str | Path, timeout_s: float = 30.0) -> ApiClient:
        endpoint = read_endpoint(StatePaths.for_fleet_file(Path(fleet_file)))
        if endpoint is None and not Path(fleet_file).is_file():
            raise BadInput(
                f"{fleet_file} does not exist: run flotilla in a fleet's folder, name the file with -f, "
                "or start a fleet with `flotilla init`"
            )
        if endpoint is None:
            raise NotRunning(
                f"no orchestrator is running for {fleet_file}: start it with `flotilla up` (or `up -d`)"
            )
        return cls(endpoint, timeout_s)

    def _check(self, response: httpx.Response) -> httpx.Response:
        if response.is_success:
            return response
        try:
            body = response.json()
            message = body.get("message") or body.get("detail") or response.text
            details = body.get("details") or []
            code = body.get("error")
        except (ValueError, AttributeError):
            message, details, code = response.text, [], None
        extra = "".join(f"\n  - {d}" for d in details)
        if code in WRONG_ARGUMENT:
            # The operator's argument is wrong, and the message says which: no status to add.
            raise BadInput(f"{message}{extra}")
        raise CliError(f"{message} (HTTP {response.status_code}){extra}")

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        httpx = _httpx()
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.ConnectError as exc:
            raise NotRunning(f"the orchestrator at {self.endpoint.url} does not answer: {exc}") from None
        except httpx.TransportError as exc:
            raise CliError(f"cannot reach the orchestrator at {self.endpoint.url}: {exc}") from None
        self._check(response)
        if response.status_code == 204 or not response.content:
            return None
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def get(self, path: str, **params: Any) -> Any:
        return self._send("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Any = None, **params: Any) -> Any:
        return self._send("POST", path, json=body, params={k: v for k, v in params.items() if v is not None})

    def put(self, path: str, body: Any = None) -> Any:
        return self._send("PUT", path, json=body)

    def delete(self, path: str) -> Any:
        return self._send("DELETE", path)

    def stream(
        self, method: str, path: str, body: Any = None, timeout_s: float | None = None, **params: Any
    ) -> Iterator[tuple[str, str]]:
        """Yield (event, data) pairs from a server-sent-events response."""
        httpx = _httpx()
        try:
            with self._http.stream(
                method,
                path,
                json=body,
                params={k: v for k, v in params.items() if v is not None},
                timeout=httpx.Timeout(timeout_s, connect=10.0),
            ) as response:
                if not response.is_success:
                    response.read()
                    self._check(response)
                yield from ((event.event, event.data) for event in iter_sse(response.iter_lines()))
        except httpx.TransportError as exc:
            raise CliError(f"connection to the orchestrator lost: {exc}") from None

    def close(self) -> None:
        self._http.close()

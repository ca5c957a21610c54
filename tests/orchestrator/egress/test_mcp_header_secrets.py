"""HTTP MCP servers' headers take declared secrets by handle; the ${NAME} form keeps working."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.config.secrets import SecretSource
from orchestrator.config.tools import McpServerConfig
from orchestrator.mcp_http.client import McpHttpClient, McpServerError, resolved_headers
from orchestrator.secrets import SecretStore


def test_a_header_handle_is_filled_in_and_redacted_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LEGACY_TOKEN", "legacy-token-value")
    store = SecretStore({"search_token": SecretSource(env="S")}, tmp_path, {"S": "handle-token-value"})
    store.load_all()
    server = McpServerConfig(
        name="search",
        url="https://search.example/mcp",
        headers={"Authorization": "Bearer {{secret:search_token}}", "X-Old": "${LEGACY_TOKEN}"},
    )
    assert resolved_headers(server, store) == {
        "Authorization": "Bearer handle-token-value",
        "X-Old": "legacy-token-value",
    }
    client = McpHttpClient(server, store)
    said = client.redact("401: Bearer handle-token-value and legacy-token-value refused")
    assert said == "401: Bearer {{secret:search_token}} and [redacted] refused"


def test_an_undeclared_header_secret_fails_the_call_by_name(tmp_path: Path) -> None:
    store = SecretStore({}, tmp_path, {})
    server = McpServerConfig(
        name="search", url="https://search.example/mcp", headers={"X-Key": "{{secret:nope}}"}
    )
    with pytest.raises(McpServerError, match="header X-Key: secret 'nope' is not declared"):
        McpHttpClient(server, store)

"""fleet.yaml's HTTP MCP servers (`tools.mcp[].url`): what `flotilla validate` says of bad input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrator.config.tools import McpServerConfig
from orchestrator.testing.cli import run_flotilla

HEAD = "version: 1\nfleet: checks\nagents:\n  finder:\n    role: finds\n    tools:\n      mcp:\n"


def validate(tmp_path: Path, servers: str, **env: str) -> str:
    (tmp_path / "fleet.yaml").write_text(HEAD + servers)
    result = run_flotilla(tmp_path, "validate", env={**os.environ, **env})
    return result.stdout + result.stderr if result.returncode != 0 else ""


def test_a_good_http_server_validates_when_its_variable_is_set(tmp_path: Path) -> None:
    servers = (
        "        - name: search\n"
        '          url: "https://search.example/mcp"\n'
        '          headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}\n'
        "          allow: [find]\n"
    )
    assert validate(tmp_path, servers, SEARCH_TOKEN="t0ken") == ""


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        (
            '        - {name: search, url: "ftp://search.example/mcp"}\n',
            "agents.finder.tools.mcp.0.url: invalid url 'ftp://search.example/mcp'",
        ),
        (
            '        - {name: search, url: "http://127.0.0.1:9/mcp", command: [search-server]}\n',
            "agents.finder.tools.mcp.0: url and command are both given",
        ),
        (
            "        - {name: search}\n",
            "agents.finder.tools.mcp.0: give command (a stdio server run by the agent) or url",
        ),
        (
            '        - {name: search, url: "http://127.0.0.1:9/mcp", headers: {X-Key: "$KEY"}}\n',
            "agents.finder.tools.mcp.0.headers: header X-Key: '$KEY': write an environment variable as ${NAME}",
        ),
        (
            '        - {name: search, url: "http://127.0.0.1:9/mcp", package: mcp-server-time}\n',
            "agents.finder.tools.mcp.0: package: only for a stdio server (command), not with url",
        ),
        (
            '        - {name: time, command: [python3, -m, mcp_server_time], headers: {X-Key: "k"}}\n',
            "agents.finder.tools.mcp.0: headers: only for an HTTP server (url), not with command",
        ),
    ],
)
def test_bad_input_is_named_by_its_field(tmp_path: Path, servers: str, expected: str) -> None:
    said = validate(tmp_path, servers)
    assert expected in said
    assert "Traceback" not in said


def test_an_unset_header_variable_is_a_warning_for_validate(tmp_path: Path) -> None:
    servers = '        - {name: search, url: "http://127.0.0.1:9/mcp", headers: {X-Key: "Bearer ${NOT_SET_ANYWHERE}"}}\n'
    (tmp_path / "fleet.yaml").write_text(HEAD + servers)
    result = run_flotilla(tmp_path, "validate")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "agents.finder.tools.mcp.0.headers.X-Key: MCP server search: header X-Key names the environment "
        "variable NOT_SET_ANYWHERE, which is not set on the orchestrator host"
    ) in result.stdout


def test_header_values_resolve_from_the_host_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.mcp_http.client import resolved_headers

    monkeypatch.setenv("SEARCH_TOKEN", "abc123")
    server = McpServerConfig(
        name="search", url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer ${SEARCH_TOKEN}"}
    )
    assert resolved_headers(server) == {"Authorization": "Bearer abc123"}
    assert server.header_variables() == {"Authorization": ["SEARCH_TOKEN"]}


def test_credentials_are_blanked_out_of_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.mcp_http.client import McpHttpClient

    monkeypatch.setenv("SEARCH_TOKEN", "s3cr3t-value")
    server = McpServerConfig(
        name="search", url="http://127.0.0.1:9/mcp", headers={"Authorization": "Bearer ${SEARCH_TOKEN}"}
    )
    said = McpHttpClient(server).redact("401: Bearer s3cr3t-value is not valid")
    assert said == "401: Bearer [redacted] is not valid"

"""fleet.yaml's secrets and tools.http as `flotilla validate` checks them (file:line: field)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli.main import cli
from orchestrator.config.fleet import ConfigError
from orchestrator.config.loader import load_fleet
from orchestrator.running_agents.session import tool_settings


def write(folder: Path, text: str) -> Path:
    path = folder / "fleet.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    return [str(p) for p in info.value.problems]


def test_the_checks_fleet_loads_and_offers_http_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_TOKEN", "value-of-the-demo-token")
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        secrets:
          demo_token: {env: DEMO_TOKEN}
        agents:
          researcher:
            tools:
              http: {allow: ["http://127.0.0.1:18790/"], allow_private: true, secrets: [demo_token]}
        """,
    )
    fleet = load_fleet(path)
    settings = tool_settings(fleet, "researcher")
    assert settings.host_tools == ["http_request"]
    assert "value-of-the-demo-token" not in settings.model_dump_json()
    result = CliRunner().invoke(cli, ["validate", "--runtime", "process", "-f", str(path)])
    assert result.exit_code == 0, result.output


def test_undeclared_and_unreadable_secrets_are_named_with_their_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOT_SET_FOR_THIS_TEST", raising=False)
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        secrets:
          gone: {env: NOT_SET_FOR_THIS_TEST}
          missing_file: {file: /nonexistent/flotilla-token}
        agents:
          researcher:
            tools:
              http:
                allow: ["https://api.example.com/v1/"]
                secrets: [gone, nowhere, missing_file]
              mcp:
                - name: search
                  url: https://search.example/mcp
                  headers: {Authorization: "Bearer {{secret:unknown}}"}
        """,
    )
    problems = problems_of(path)
    assert any(
        "fleet.yaml:11: agents.researcher.tools.http.secrets.0: agent 'researcher' needs secret 'gone'" in p
        and "NOT_SET_FOR_THIS_TEST is not set" in p
        for p in problems
    )
    assert any(
        "fleet.yaml:11: agents.researcher.tools.http.secrets.2:" in p and "cannot read file" in p
        for p in problems
    )
    assert any(
        "fleet.yaml:11: agents.researcher.tools.http.secrets.1:" in p
        and "secret 'nowhere' is not declared" in p
        for p in problems
    )
    assert any(
        "agents.researcher.tools.mcp.0.headers.Authorization" in p and "secret 'unknown' is not declared" in p
        for p in problems
    )


def test_the_environment_form_of_mcp_headers_still_works_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_TOKEN", "abc-search-token")
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          finder:
            tools:
              mcp:
                - name: search
                  url: https://search.example/mcp
                  headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}
        """,
    )
    result = CliRunner().invoke(cli, ["validate", "--runtime", "process", "-f", str(path)])
    assert result.exit_code == 0, result.output
    assert "${SEARCH_TOKEN} is deprecated" in result.output
    assert "{{secret:search_token}}" in result.output


@pytest.mark.parametrize(
    ("http", "message"),
    [
        ('{allow: ["ftp://files.example/"]}', "give an http:// or https:// address"),
        ('{allow: ["https://user@api.example/"]}', "no user, query or fragment"),
        ('{allow: [{url: "https://*.example.com/", allow_private: true}]}', "needs an exact host"),
        ('{allow: ["https://*.example.com/"], allow_private: true}', "needs an exact host"),
        ("{methods: [G E T]}", "invalid HTTP method"),
        ("{approval: {'POST?': required}}", "neither an HTTP method nor *"),
        ("{max_response_bytes: 1TiB}", "max_response_bytes"),
        ("{secrets: [Bad-Name]}", "invalid secret name"),
        ("{allow_everything: true}", "allow_everything"),
    ],
)
def test_a_bad_policy_is_refused_with_its_reason(tmp_path: Path, http: str, message: str) -> None:
    path = write(
        tmp_path,
        f"""\
        version: 1
        fleet: demo
        agents:
          researcher:
            tools:
              http: {http}
        """,
    )
    problems = problems_of(path)
    assert any("agents.researcher.tools.http" in p and message in p for p in problems), problems


def test_approval_patterns_expand_over_the_allowed_methods(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        agents:
          researcher:
            tools:
              http:
                allow: ["https://api.example.com/"]
                methods: [GET, POST, delete]
                approval: {"*": required, GET: none}
        """,
    )
    settings = tool_settings(load_fleet(path), "researcher")
    assert settings.approval_required == ["http_request.DELETE", "http_request.POST"]


def test_a_granted_secret_without_hosts_still_works_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEMO_TOKEN", "value-of-the-demo-token")
    monkeypatch.setenv("BOUND_TOKEN", "value-of-the-bound-token")
    path = write(
        tmp_path,
        """\
        version: 1
        fleet: demo
        secrets:
          demo_token: {env: DEMO_TOKEN}
          bound_token: {env: BOUND_TOKEN, hosts: [api.example.com, "*.example.org"], places: [header, query]}
          hook_only: {env: DEMO_TOKEN}
        agents:
          researcher:
            tools:
              http: {allow: ["https://api.example.com/"], secrets: [demo_token, bound_token]}
        """,
    )
    result = CliRunner().invoke(cli, ["validate", "--runtime", "process", "-f", str(path)])
    assert result.exit_code == 0, result.output
    assert "secret 'demo_token' names no hosts" in result.output
    assert "bound_token" not in result.output and "hook_only" not in result.output
    bound = load_fleet(path).config.secrets["bound_token"]
    assert bound.allows_host("api.example.com") and bound.allows_host("eu.example.org")
    assert not bound.allows_host("example.org") and not bound.allows_host("api.example.com.evil.net")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{env: X, hosts: []}", "name at least one host"),
        ("{env: X, hosts: ['https://api.example.com/']}", "is not a host name"),
        ("{env: X, places: [cookie]}", "places"),
    ],
)
def test_a_bad_host_binding_is_refused_with_its_reason(tmp_path: Path, source: str, message: str) -> None:
    path = write(tmp_path, f"version: 1\nfleet: demo\nsecrets:\n  bad: {source}\nagents:\n  a: {{}}\n")
    assert any(message in problem for problem in problems_of(path)), problems_of(path)

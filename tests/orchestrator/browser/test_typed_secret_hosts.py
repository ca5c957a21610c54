"""A secret typed into a page goes to that page's host, so `browser_type` fills a handle only on a
page of a host its secret names, and only for a secret that may travel in a request's body."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.browser.tools import typed_secret_problem
from orchestrator.config.secrets import SecretSource
from orchestrator.secrets import SecretStore


@pytest.fixture
def store(tmp_path: Path) -> SecretStore:
    sources = {
        "bank": SecretSource(env="BANK", hosts=["login.bank.test"], places=["body"]),
        "api_key": SecretSource(env="API_KEY", hosts=["login.bank.test"]),  # header only
        "legacy": SecretSource(env="LEGACY"),
    }
    loaded = SecretStore(sources, tmp_path, {"BANK": "b4nk-pass", "API_KEY": "k3y", "LEGACY": "old"})
    loaded.load_all()
    return loaded


def test_a_secret_is_typed_into_a_page_of_its_own_host(store: SecretStore) -> None:
    assert typed_secret_problem(store, "{{secret:bank}}", "https://login.bank.test/signin") is None


def test_a_page_of_another_allowed_host_does_not_get_the_secret(store: SecretStore) -> None:
    problem = typed_secret_problem(store, "pw: {{secret:bank}}", "http://echo.attacker.test/form")
    assert problem is not None
    assert "secrets.bank.hosts" in problem and "echo.attacker.test" in problem
    assert "b4nk-pass" not in problem


def test_a_secret_kept_to_headers_is_not_typed_into_any_page(store: SecretStore) -> None:
    problem = typed_secret_problem(store, "{{secret:api_key}}", "https://login.bank.test/signin")
    assert problem is not None and "secrets.api_key.places" in problem


def test_a_secret_without_hosts_and_plain_text_are_left_as_they_were(store: SecretStore) -> None:
    assert typed_secret_problem(store, "{{secret:legacy}}", "http://anywhere.test/") is None
    assert typed_secret_problem(store, "alice", "http://anywhere.test/") is None

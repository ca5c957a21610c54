"""Secrets by handle: declared once, filled in only when sent, redacted from what comes back."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from orchestrator.config.secrets import SecretSource, secret_handles
from orchestrator.secrets import SecretNotAllowed, SecretStore, SecretUnavailable


def test_env_secret_is_substituted_only_when_granted(tmp_path: Path) -> None:
    store = SecretStore(
        {"demo_token": SecretSource(env="DEMO_TOKEN")}, tmp_path, {"DEMO_TOKEN": "s3cr3t-value"}
    )
    assert store.substitute("Bearer {{secret:demo_token}}", {"demo_token"}) == "Bearer s3cr3t-value"
    with pytest.raises(SecretNotAllowed, match="'demo_token' is not granted"):
        store.substitute("Bearer {{secret:demo_token}}", set())
    assert store.substitute("{{ secret:demo_token }}") == "s3cr3t-value"


def test_redaction_replaces_values_with_handles(tmp_path: Path) -> None:
    store = SecretStore({"a": SecretSource(env="A")}, tmp_path, {"A": "token-abcdef"})
    store.load_all()
    assert store.redact("echo: token-abcdef!") == "echo: {{secret:a}}!"
    assert store.redact_bytes(b"xtoken-abcdefx") == b"x{{secret:a}}x"


def test_unavailable_secrets_say_why_without_a_value(tmp_path: Path) -> None:
    store = SecretStore({"gone": SecretSource(env="NOT_SET_ANYWHERE")}, tmp_path, {})
    with pytest.raises(SecretUnavailable, match="NOT_SET_ANYWHERE is not set"):
        store.value("gone")
    with pytest.raises(SecretUnavailable, match="not declared"):
        store.value("other")


def test_file_secret_outside_state_folder(tmp_path: Path) -> None:
    (tmp_path / "token.txt").write_text("from-file\n")
    (tmp_path / ".flotilla").mkdir()
    (tmp_path / ".flotilla" / "leak.txt").write_text("x")
    store = SecretStore(
        {"f": SecretSource(file="token.txt"), "bad": SecretSource(file=".flotilla/leak.txt")}, tmp_path, {}
    )
    assert store.value("f") == "from-file"
    assert store.problem("bad") is not None and "state folder" in str(store.problem("bad"))


def test_source_needs_exactly_one_origin() -> None:
    with pytest.raises(ValidationError, match="exactly one"):
        SecretSource()
    with pytest.raises(ValidationError, match="exactly one"):
        SecretSource(env="A", file="b")


def test_handles_are_found_once_each() -> None:
    assert secret_handles("{{secret:a}} {{secret:b}} {{secret:a}}") == ["a", "b"]

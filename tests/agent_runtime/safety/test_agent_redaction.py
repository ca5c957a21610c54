"""Credential detectors: what is redacted, what is left alone, and the turns and logs they guard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_runtime.safety.redaction import redact, redacted_note
from agent_runtime.workspace.dailylog import append_daily
from agent_runtime.workspace.history import HistoryLog, Turn, redact_turn

SECRETS = [
    (
        "Use API key sk-live-4f9a8b7c6d5e4f3a2b1c0d9e for billing",
        "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e",
        "api-key",
    ),
    ("stripe: sk_live_51HxYzAbCdEfGhIjKlMnOp", "sk_live_51HxYzAbCdEfGhIjKlMnOp", "api-key"),
    (
        "push with ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "token",
    ),
    ("slack bot xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij", "token"),
    ("the AWS id is AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "api-key"),
    (
        "maps key AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
        "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW",
        "api-key",
    ),
    ("Authorization: Bearer abc123def456ghi789jkl", "abc123def456ghi789jkl", "token"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sflKxwRJSMeKKF2QT4fw", "eyJhbGciOiJIUzI1NiJ9", "token"),
    ("db at postgres://app:s3cr3t-pw@db:5432/main", "s3cr3t-pw", "password"),
    ("my password is hunter2!", "hunter2!", "password"),
    ("password: correct horse", "correct", "password"),
    ("api_key=abcd1234", "abcd1234", "secret"),
    ("the locker pin 4512", "4512", "password"),
    ("blob aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5", "secret"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
        "private-key",
    ),
]
PROSE = [
    "The user lives in Lyon and prefers dark mode.",
    "the password is required for the admin page",
    "the token limit is 8000 tokens",
    "commit 3f2a9c0d1e4b5a6978877665544332211aabbccd fixed it",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "Reset your password in settings.",
    "Our API key rotation happens monthly.",
]


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS)
def test_credentials_are_redacted(text: str, secret: str, kind: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert f"[REDACTED {kind}]" in result.text and kind in result.kinds
    assert redact(result.text) == type(result)(result.text)  # idempotent: a marker is no secret


@pytest.mark.parametrize("text", PROSE)
def test_ordinary_prose_is_left_alone(text: str) -> None:
    assert redact(text).text == text


def test_the_note_to_the_model_holds_nothing_to_redact() -> None:
    note = redacted_note(("api-key", "password", "token", "secret", "private-key"))
    assert redact(note).text == note


def test_turns_are_redacted_in_content_and_tool_call_arguments(tmp_path: Path) -> None:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "write_file", "arguments": json.dumps({"content": "token=ghp_" + "a1" * 20})},
    }
    turn = Turn(role="assistant", content="saving sk-proj-abcdefghijklmnop1234", tool_calls=(call,))
    clean = redact_turn(turn)
    assert "sk-proj" not in clean.content and "ghp_" not in clean.tool_calls[0]["function"]["arguments"]
    json.loads(clean.tool_calls[0]["function"]["arguments"])  # still valid JSON
    quoted = {"function": {"name": "x", "arguments": json.dumps({"note": 'password: abc\\"def'})}}
    kept = redact_turn(Turn(role="assistant", content="", tool_calls=(quoted,)))
    assert json.loads(kept.tool_calls[0]["function"]["arguments"]) == {
        "note": 'password: [REDACTED password]"def'
    }
    plain = Turn(role="user", content="hello")
    assert redact_turn(plain) is plain
    log = HistoryLog(tmp_path)
    log.append(turn)
    [stored] = list(log.iter_turns())
    assert stored.content == clean.content


def test_daily_log_lines_are_redacted(tmp_path: Path) -> None:
    path = append_daily(tmp_path, "operator", "ok: configured with key sk-test-abcdefghijklmnop1234")
    assert "sk-test" not in path.read_text(encoding="utf-8")


def test_a_secret_handle_is_kept_and_what_surrounds_it_still_redacted() -> None:
    text = "Bearer {{secret:demo_token}} and {{ secret:api_key }}; password: hunter2! then Bearer abcdefghijklmnop1234"
    cleaned = redact(text)
    assert "Bearer {{secret:demo_token}}" in cleaned.text and "{{ secret:api_key }}" in cleaned.text
    assert "hunter2" not in cleaned.text and "abcdefghijklmnop1234" not in cleaned.text
    assert set(cleaned.kinds) == {"password", "token"}
    assert redact("{{secret:demo_token}}").changed is False

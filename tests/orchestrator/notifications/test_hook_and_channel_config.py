"""fleet.yaml `hooks:` and `channels:` refused with a clear reason; signatures checked exactly."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from orchestrator.config.hooks import HookConfig
from orchestrator.hooks.render import render
from orchestrator.hooks.signatures import (
    SignatureRefused,
    StaleRequest,
    github_signature,
    hmac_signature,
    verify,
)
from orchestrator.testing.cli import run_flotilla

BASE = """\
version: 1
fleet: cfg
secrets:
  hook_secret: {env: HOOK_SECRET}
agents:
  coordinator:
    model: test
"""


def validate(tmp_path: Path, extra: str) -> str:
    (tmp_path / "fleet.yaml").write_text(BASE + extra)
    result = run_flotilla(tmp_path, "validate")
    return result.stdout + result.stderr


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        (
            "    channels: [nowhere]\n",
            "fleet.yaml:8: agents.coordinator.channels.0: unknown channel 'nowhere' (channels: none declared)",
        ),
        (
            'channels:\n  ops: {type: webhook, url: "http://127.0.0.1:9/x?k={{secret:missing}}"}\n',
            "channels.ops: {{secret:missing}} names a secret not declared under secrets:",
        ),
        ("channels:\n  ops: {type: pager, url: x}\n", "'pager'"),
        ("channels:\n  ops: {type: slack, channel: '#ops'}\n", "give either token (with channel) or webhook"),
        (
            "hooks:\n  github: {agent: nobody, secret: hook_secret, signature: github}\n",
            "unknown agent 'nobody'",
        ),
        (
            "hooks:\n  github: {agent: coordinator, secret: other, signature: github}\n",
            "hooks.github.secret: secret 'other' is not declared",
        ),
        (
            "hooks:\n  github: {agent: coordinator, secret: hook_secret, signature: md5}\n",
            "'github' or 'hmac'",
        ),
        (
            "hooks:\n  Bad_Name: {agent: coordinator, secret: hook_secret, signature: github}\n",
            "invalid hook name",
        ),
        (
            "    heartbeat:\n      rules: ['daily 09:00: notify ops: stand-up']\n",
            "agents.coordinator.heartbeat.rules.0: the rule notifies channel 'ops', which is not in "
            "agents.coordinator.channels",
        ),
        (
            'channels:\n  team: {type: telegram_chat, token: "{{secret:hook_secret}}", agents: [nobody]}\n',
            "channels.team.agents.0: unknown agent 'nobody'",
        ),
        (
            'channels:\n  team: {type: telegram_chat, token: "{{secret:bot}}", agents: [coordinator]}\n',
            "channels.team: {{secret:bot}} names a secret not declared under secrets:",
        ),
        ("channels:\n  team: {type: telegram_chat, token: x, agents: []}\n", "at least 1 item"),
        ("channels:\n  team: {type: slack_chat, token: x, agents: [coordinator]}\n", "signing_secret"),
        (
            "    channels: [team]\nchannels:\n  team: {type: telegram_chat, token: x, agents: [coordinator]}\n",
            "channel 'team' is a chat channel",
        ),
    ],
)
def test_bad_hooks_and_channels_are_refused_with_the_reason(tmp_path: Path, extra: str, problem: str) -> None:
    out = validate(tmp_path, extra)
    assert problem in out, out


def test_the_checks_fleet_validates(tmp_path: Path) -> None:
    extra = (
        "    channels: [ops-hook, ops-mail]\n"
        "channels:\n"
        '  ops-hook: {type: webhook, url: "http://127.0.0.1:18791/notify"}\n'
        '  ops-mail: {type: email, smtp: {host: 127.0.0.1, port: 18025}, from: "fleet@example.test", '
        'to: ["ops@example.test"]}\n'
        "hooks:\n"
        "  github: {agent: coordinator, secret: hook_secret, signature: github}\n"
    )
    (tmp_path / "fleet.yaml").write_text(BASE + extra)
    result = run_flotilla(tmp_path, "validate", env={**os.environ, "HOOK_SECRET": "s3cret-for-validate"})
    assert "is valid" in result.stdout + result.stderr


GITHUB = HookConfig(agent="a", secret="s", signature="github")
HMAC = HookConfig(agent="a", secret="s", signature="hmac", replay_window="1m")


def test_github_signatures_are_checked_against_the_exact_body() -> None:
    body = b'{"zen": "Keep it logically awesome."}'
    headers = {"x-hub-signature-256": github_signature("topsecret", body), "x-github-delivery": "d-1"}
    verified = verify(GITHUB, "topsecret", headers, body, time.time())
    assert verified.delivery == "d-1" and len(verified.replay_keys) == 2
    for bad_headers, bad_body in [
        ({"x-hub-signature-256": github_signature("wrong", body)}, body),
        (headers, body + b" "),
        ({"x-hub-signature-256": github_signature("topsecret", body).removeprefix("sha256=")}, body),
        ({}, body),
    ]:
        with pytest.raises(SignatureRefused):
            verify(GITHUB, "topsecret", bad_headers, bad_body, time.time())


def test_hmac_signatures_cover_the_timestamp_and_refuse_stale_ones() -> None:
    body = b"job failed"
    now = int(time.time())
    headers = {"x-flotilla-timestamp": str(now), "x-flotilla-signature": hmac_signature("k3y", now, body)}
    assert verify(HMAC, "k3y", headers, body, now + 30).replay_keys
    with pytest.raises(StaleRequest):
        verify(HMAC, "k3y", headers, body, now + 61)
    moved = {**headers, "x-flotilla-timestamp": str(now + 1)}
    with pytest.raises(SignatureRefused):
        verify(HMAC, "k3y", moved, body, now)


def test_a_payload_renders_as_a_summary_then_the_json_without_control_characters() -> None:
    body = b'{"action": "opened", "repository": {"full_name": "harbour/quay"}, "note": "a\\u0000b\\u007f"}'
    verified = verify(
        GITHUB, "s", {"x-hub-signature-256": github_signature("s", body), "x-github-event": "issues"}, body, 0
    )
    text = render("github", verified, body, "application/json")
    assert text.splitlines()[:2] == [
        "Hook github: GitHub event issues",
        "action: opened · repository: harbour/quay",
    ]
    assert "\x7f" not in text and '"note": "a\\u0000b"' in text


def test_an_unreadable_hook_secret_is_named_with_its_source(tmp_path: Path) -> None:
    extra = "hooks:\n  github: {agent: coordinator, secret: hook_secret, signature: github}\n"
    (tmp_path / "fleet.yaml").write_text(BASE + extra)
    env = {k: v for k, v in os.environ.items() if k != "HOOK_SECRET"}
    result = run_flotilla(tmp_path, "validate", env=env)
    assert result.returncode == 0
    assert "secrets.hook_secret: secret 'hook_secret': the environment variable HOOK_SECRET is not set" in (
        result.stdout
    )
    result = run_flotilla(tmp_path, "apply", env=env)
    assert result.returncode == 2
    assert (
        "hooks.github.secret: agent 'coordinator' needs secret 'hook_secret': the environment variable "
        "HOOK_SECRET is not set"
    ) in result.stderr

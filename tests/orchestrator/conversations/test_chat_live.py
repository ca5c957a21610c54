"""Conversations on a running fleet (process runtime, the `test` model) through local fakes of
Telegram's Bot API and Slack's Web API on 127.0.0.1: nothing reaches the real services.

Two people pair with codes from `flotilla channels pair`; a stranger is refused; what Ana states
is saved in her scope and recalled in her conversation, never in Bruno's (the hidden-by-default
rule, end to end); `flotilla memory list --scope` shows it; Slack's Events API reaches the
orchestrator with a verified signature and is answered in the thread.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.state.endpoint import read_endpoint
from orchestrator.state.paths import StatePaths
from orchestrator.testing.cli import free_port, run_flotilla
from tests.orchestrator.conversations.chat_fakes import FakeSlack, FakeTelegram, slack_headers

TELEGRAM_TOKEN = f"4242:{secrets.token_hex(12)}"
SLACK_TOKEN = f"xoxb-{secrets.token_hex(12)}"
SLACK_SIGNING = secrets.token_hex(16)
ANA, BRUNO, STRANGER = 111, 222, 333

FLEET = """\
version: 1
fleet: chatlive
secrets:
  bot_token: {{env: BOT_TOKEN}}
  slack_token: {{env: SLACK_TOKEN}}
  slack_signing: {{env: SLACK_SIGNING}}
channels:
  team:
    type: telegram_chat
    token: "{{{{secret:bot_token}}}}"
    api_base: "{telegram}"
    agents: [coordinator, noticeboard]
    poll_timeout_s: 1
  office:
    type: slack_chat
    token: "{{{{secret:slack_token}}}}"
    signing_secret: "{{{{secret:slack_signing}}}}"
    api_base: "{slack}"
    agents: [coordinator]
agents:
  coordinator:
    model: test
  noticeboard:
    model: test
    memory_shared_writers: [operator, person]   # what people tell it is for everyone
"""


def operator_env() -> dict[str, str]:
    return {
        **os.environ,
        "BOT_TOKEN": TELEGRAM_TOKEN,
        "SLACK_TOKEN": SLACK_TOKEN,
        "SLACK_SIGNING": SLACK_SIGNING,
    }


@pytest.fixture(scope="module")
def telegram() -> Iterator[FakeTelegram]:
    fake = FakeTelegram(TELEGRAM_TOKEN).start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(SLACK_TOKEN, SLACK_SIGNING).start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def fleet_dir(
    tmp_path_factory: pytest.TempPathFactory, telegram: FakeTelegram, slack: FakeSlack
) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("chat-fleet")
    (folder / "fleet.yaml").write_text(FLEET.format(telegram=telegram.api_base, slack=slack.api_base))
    try:
        started = run_flotilla(
            folder, "up", "-d", "--runtime", "process", "--port", str(free_port()), env=operator_env()
        )
        assert started.returncode == 0, started.stdout + started.stderr
        yield folder
    finally:
        run_flotilla(folder, "down", "-v", env=operator_env())


def endpoint_url(folder: Path) -> str:
    endpoint = read_endpoint(StatePaths.for_fleet_file(folder / "fleet.yaml"))
    assert endpoint is not None
    return endpoint.url


def pair(folder: Path, telegram: FakeTelegram, user: int, name: str) -> None:
    issued = run_flotilla(folder, "channels", "pair", "team", env=operator_env())
    assert issued.returncode == 0, issued.stderr
    code = issued.stdout.strip()
    assert "valid until" in issued.stderr
    telegram.say(user, name, code)
    (paired,) = telegram.replies_to(user, 1, timeout_s=60)
    assert paired.text.startswith("Paired."), paired.text


def ask(telegram: FakeTelegram, user: int, name: str, text: str) -> str:
    before = len([s for s in telegram.sent if s.chat_id == str(user)])
    telegram.say(user, name, text)
    return telegram.replies_to(user, before + 1, timeout_s=90)[-1].text


def test_two_people_each_recall_only_their_own_and_the_shared_facts(
    fleet_dir: Path, telegram: FakeTelegram
) -> None:
    telegram.say(STRANGER, "Mallory", 'call memory_search {"query": "locker"}')
    (refused,) = telegram.replies_to(STRANGER, 1, timeout_s=60)
    assert "not paired" in refused.text

    pair(fleet_dir, telegram, ANA, "Ana")
    pair(fleet_dir, telegram, BRUNO, "Bruno")
    saved = ask(
        telegram,
        ANA,
        "Ana",
        'call memory_save {"text": "The user\'s locker code is 4512", "source": "user_stated"}',
    )
    assert "user_stated" in saved, saved

    ana_recall = ask(telegram, ANA, "Ana", 'call memory_search {"query": "locker code"}')
    assert "4512" in ana_recall, ana_recall
    bruno_recall = ask(telegram, BRUNO, "Bruno", 'call memory_search {"query": "locker code"}')
    assert "4512" not in bruno_recall, bruno_recall

    listed = run_flotilla(
        fleet_dir,
        "memory",
        "list",
        "coordinator",
        "--scope",
        f"person:team:{ANA}",
        "--json",
        env=operator_env(),
    )
    assert listed.returncode == 0, listed.stderr
    facts = json.loads(listed.stdout)["facts"]
    assert [(f["scope"], f["source"]) for f in facts] == [(f"person:team:{ANA}", "user_stated")]
    shared = run_flotilla(
        fleet_dir, "memory", "list", "coordinator", "--scope", "shared", "--json", env=operator_env()
    )
    assert all("4512" not in f["text"] for f in json.loads(shared.stdout)["facts"])

    # An agent whose admission rule lets people write its shared memory: Bruno finds Ana's notice.
    posted = ask(
        telegram, ANA, "Ana", '@noticeboard call memory_save {"text": "The kitchen is closed on Friday"}'
    )
    assert posted.startswith("noticeboard: "), posted
    found = ask(telegram, BRUNO, "Bruno", '@noticeboard call memory_search {"query": "kitchen closed"}')
    assert "kitchen is closed on Friday" in found, found

    people = run_flotilla(fleet_dir, "channels", "people", "--json", env=operator_env())
    principals = {p["principal"] for p in json.loads(people.stdout)}
    assert principals == {f"person:team:{ANA}", f"person:team:{BRUNO}"}


def test_slack_events_reach_the_agent_and_the_reply_lands_in_the_thread(
    fleet_dir: Path, slack: FakeSlack
) -> None:
    url = f"{endpoint_url(fleet_dir)}/channels/slack/office/events"
    challenge = json.dumps({"type": "url_verification", "challenge": "abc"}).encode()
    answered = slack.post_event(url, challenge)
    assert answered.status_code == 200 and answered.json() == {"challenge": "abc"}
    forged = slack.post_event(url, challenge, slack_headers("wrong-secret", challenge))
    assert forged.status_code == 401

    issued = run_flotilla(fleet_dir, "channels", "pair", "office", env=operator_env())
    code = issued.stdout.strip()
    assert slack.post_event(url, slack.message_event("U7", code, channel="D7", ts="1.1")).status_code == 200
    (paired,) = slack.replies_in("D7", 1, timeout_s=60)
    assert paired.text.startswith("Paired.")
    slack.post_event(url, slack.message_event("U7", "hello from slack", channel="C7", ts="1700.42"))
    (reply,) = slack.replies_in("C7", 1, timeout_s=90)
    assert "message from person:office:U7] hello from slack" in reply.text, reply.text
    assert reply.params["thread_ts"] == "1700.42"


def test_no_token_or_signing_secret_reaches_the_log_or_the_database(fleet_dir: Path) -> None:
    kept = [fleet_dir / ".flotilla" / "orchestrator.log", fleet_dir / ".flotilla" / "state.db"]
    for path in kept:
        data = path.read_bytes()
        for value in (TELEGRAM_TOKEN, SLACK_TOKEN, SLACK_SIGNING):
            assert value.encode() not in data, f"a secret's value is in {path.name}"

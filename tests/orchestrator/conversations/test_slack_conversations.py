"""Slack conversations against a local fake of Slack's Web API: the Events API request's signature
checked (a forged or stale one refused before anything is read), the url_verification challenge
answered, a paired person's message answered in its thread, a retried event answered once, and
long replies cut to the documented 39,000 characters."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_runtime.protocol import WorkResult
from orchestrator.broker import Inbox
from orchestrator.config.loader import load_fleet
from orchestrator.conversations import PeopleStore
from orchestrator.conversations.router import Conversations
from orchestrator.conversations.slack import MESSAGE_LIMIT, SlackEvents, SlackRefused
from orchestrator.events import EventBus
from orchestrator.fleet.view import FleetView
from orchestrator.lifecycle import Controls
from orchestrator.state.db import Database
from tests.orchestrator.conversations.chat_fakes import FakeSlack, slack_headers

TOKEN = f"xoxb-{secrets.token_hex(12)}"
SIGNING = secrets.token_hex(16)
FLEET = """\
version: 1
fleet: slacks
secrets:
  slack_token: {{env: SLACK_TOKEN}}
  slack_signing: {{env: SLACK_SIGNING}}
channels:
  team:
    type: slack_chat
    token: "{{{{secret:slack_token}}}}"
    signing_secret: "{{{{secret:slack_signing}}}}"
    api_base: "{api_base}"
    agents: [alpha]
agents:
  alpha: {{model: test}}
"""


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    fake = FakeSlack(TOKEN, SIGNING).start()
    try:
        yield fake
    finally:
        fake.stop()


def _events(
    tmp_path: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> tuple[SlackEvents, Conversations, Inbox]:
    monkeypatch.setenv("SLACK_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_SIGNING", SIGNING)
    (tmp_path / "fleet.yaml").write_text(FLEET.format(api_base=slack.api_base))
    db = Database(tmp_path / "state.db")
    fleet = FleetView(load_fleet(tmp_path / "fleet.yaml"))
    events = EventBus(db)
    inbox = Inbox(db, events, Controls(db), fleet)
    conversations = Conversations(fleet, inbox, events, PeopleStore(db))
    return SlackEvents(fleet, conversations.handle), conversations, inbox


async def _answer(inbox: Inbox, text: str = "") -> None:
    while True:
        item = await inbox.next("alpha", 0.2)
        if item is not None:
            inbox.complete("alpha", item.id, WorkResult(text=text or f"heard {item.principal}: {item.text}"))


def _send(
    events: SlackEvents, slack: FakeSlack, body: bytes, headers: dict[str, str] | None = None
) -> dict[str, object]:
    return events.receive("team", headers or slack.signed(body), body).body


def test_forged_and_stale_requests_are_refused(
    tmp_path: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, _conversations, inbox = _events(tmp_path, slack, monkeypatch)
    body = slack.message_event("U1", "hello")
    forged = slack_headers("not-the-secret", body)
    with pytest.raises(SlackRefused) as refused:
        _send(events, slack, body, forged)
    assert refused.value.status == 401
    with pytest.raises(SlackRefused) as stale:
        _send(events, slack, body, slack.signed(body, at=time.time() - 600))
    assert stale.value.status == 401
    with pytest.raises(SlackRefused) as unknown:
        events.receive("nope", slack.signed(body), body)
    assert unknown.value.status == 404
    assert inbox.counts("alpha").unfinished == 0


def test_the_url_verification_challenge_is_answered(
    tmp_path: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    events, _conversations, _inbox = _events(tmp_path, slack, monkeypatch)
    body = json.dumps({"type": "url_verification", "challenge": "c-123"}).encode()
    assert _send(events, slack, body) == {"challenge": "c-123"}


def test_a_paired_person_is_answered_in_the_thread_once(
    tmp_path: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        events, conversations, inbox = _events(tmp_path, slack, monkeypatch)
        inbox.bind_loop(asyncio.get_running_loop())
        agent = asyncio.create_task(_answer(inbox))
        try:
            _send(events, slack, slack.message_event("U1", "hello", channel="D1", ts="1.1"))
            (refusal,) = await asyncio.to_thread(slack.replies_in, "D1")
            assert "not paired" in refusal.text
            assert inbox.counts("alpha").unfinished == 0
            slack.sent.clear()

            code = conversations.pair_code("team").code
            _send(events, slack, slack.message_event("U1", f"<@UBOT> {code}", channel="D1", ts="1.2"))
            (paired,) = await asyncio.to_thread(slack.replies_in, "D1")
            assert paired.text.startswith("Paired.")
            slack.sent.clear()

            body = slack.message_event("U1", "what is up?", channel="C9", ts="1700.5")
            _send(events, slack, body)
            _send(events, slack, body)  # Slack's retry of the same event
            mention = json.loads(body)
            mention["event_id"], mention["event"]["type"] = "EvMention", "app_mention"
            _send(events, slack, json.dumps(mention).encode())  # the same message, as a mention
            (reply,) = await asyncio.to_thread(slack.replies_in, "C9")
            assert reply.text == "heard person:team:U1: what is up?"
            assert reply.params["thread_ts"] == "1700.5"
            await asyncio.sleep(0.5)
            assert len(slack.sent) == 1
            slack.sent.clear()

            # Markup in an answer is shown as written: no channel-wide notification, no hidden link.
            markup = slack.message_event("U1", "say &lt;!channel&gt; &amp; more", channel="C9", ts="1700.6")
            _send(events, slack, markup)
            (escaped,) = await asyncio.to_thread(slack.replies_in, "C9")
            assert escaped.text == "heard person:team:U1: say &lt;!channel&gt; &amp; more"
            assert escaped.params["mrkdwn"] is False
            assert inbox.counts("alpha").unfinished == 0
        finally:
            agent.cancel()

    asyncio.run(scenario())


def test_long_replies_are_cut_to_slacks_limit(
    tmp_path: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        events, conversations, inbox = _events(tmp_path, slack, monkeypatch)
        inbox.bind_loop(asyncio.get_running_loop())
        long_answer = ("word " * 20_000).strip()
        agent = asyncio.create_task(_answer(inbox, long_answer))
        try:
            code = conversations.pair_code("team").code
            _send(events, slack, slack.message_event("U2", code, channel="D2", ts="2.1"))
            await asyncio.to_thread(slack.replies_in, "D2")
            _send(events, slack, slack.message_event("U2", "everything", channel="D2", ts="2.2"))
            sent = await asyncio.to_thread(slack.replies_in, "D2", 4)
            pieces = [s.text for s in sent[1:]]
            assert all(len(piece) <= MESSAGE_LIMIT for piece in pieces)
            assert " ".join(pieces) == long_answer
        finally:
            agent.cancel()

    asyncio.run(scenario())

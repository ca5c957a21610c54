"""A model call cut by an orchestrator that went away is made again, a bounded number of times;
a gateway that is briefly unreachable (restarting) is waited for."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from agent_runtime.work.chat import ChatClient, ChatError
from agent_runtime.work.loop import CALL_RETRIES
from tests.agent_runtime.conftest import HarnessFactory
from tests.agent_runtime.fakes import Reply


class CutText(str):
    """Reply text whose stream breaks after its first piece, as when the orchestrator is killed."""

    def __getitem__(self, key: Any) -> str:
        if isinstance(key, slice) and (key.start or 0) > 0:
            raise ConnectionResetError("the orchestrator went away")
        return str.__getitem__(self, key)


LONG = "the first part of an answer that never finished " * 3


def test_a_call_cut_mid_stream_is_made_again_and_the_item_succeeds(harness: HarnessFactory) -> None:
    replies = iter([Reply(CutText(LONG)), Reply("the whole answer")])
    h = harness(lambda body: next(replies))
    result = h.send("hello")
    assert result.ok, result.error
    assert result.text == "the whole answer"
    assert len(h.fake.chat_requests) == 2
    # Both tries are one logical call: the gateway answers the second from its record if it
    # had settled the first.
    first, second = h.fake.call_keys
    assert first and first == second


def test_each_logical_call_has_its_own_key(harness: HarnessFactory) -> None:
    h = harness(lambda body: Reply("an answer"))
    assert h.send("one").ok and h.send("two").ok
    keys = h.fake.call_keys
    assert len(keys) >= 2 and all(keys) and len(set(keys)) == len(keys)


def test_a_call_cut_every_time_fails_after_a_bounded_number_of_tries(harness: HarnessFactory) -> None:
    h = harness(lambda body: Reply(CutText(LONG)))
    result = h.send("hello")
    assert not result.ok and "reply stream broke" in (result.error or "")
    assert len(h.fake.chat_requests) == CALL_RETRIES + 1


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_gateway_that_comes_back_is_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens at first (connection refused: nothing was sent, nothing charged)."""
    port = free_port()
    body = b'{"choices": [{"message": {"role": "assistant", "content": "back"}}]}'

    def serve_later() -> None:
        time.sleep(1.5)
        with socket.socket() as server:
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", port))
            server.listen(1)
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
                conn.sendall(head.encode() + b"connection: close\r\n\r\n" + body)

    thread = threading.Thread(target=serve_later, daemon=True)
    thread.start()
    client = ChatClient(f"http://127.0.0.1:{port}/v1", "token", max_retries=0)
    try:
        answer = client.create("test", [{"role": "user", "content": "hi"}])
    finally:
        client.close()
    thread.join(5)
    assert answer["choices"][0]["message"]["content"] == "back"


def test_a_gateway_that_stays_away_fails_after_the_outage_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agent_runtime.work.chat.OUTAGE_WAIT_S", 0.5)
    client = ChatClient(f"http://127.0.0.1:{free_port()}/v1", "token", max_retries=0)
    try:
        with pytest.raises(ChatError, match="cannot reach the gateway"):
            client.create("test", [{"role": "user", "content": "hi"}])
    finally:
        client.close()

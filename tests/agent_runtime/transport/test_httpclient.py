"""The agent's HTTP client: connections kept alive and replaced when the server closed them, no
Nagle stall on a POST, and a body cut short, a refused connection or a silent server reported
as errors, never as a whole answer."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent_runtime.transport.httpclient import ConnectFailed, HttpClient, HttpError
from tests.nagle import delayed_ack_stall, median_round_trip

# A kept-alive POST must take less than this share of the measured delayed-ACK stall.
MAX_SHARE_OF_STALL = 0.25


class _Echo(BaseHTTPRequestHandler):
    """Answers a POST with its body and a GET with the path, keeping the connection open."""

    protocol_version = "HTTP/1.1"
    # Its answer is written in two parts (head, body); the stall measured must be the client's.
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self._answer(body)

    def do_GET(self) -> None:
        self._answer(self.path.encode())

    def _answer(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.answered += 1  # type: ignore[attr-defined]
        if self.server.close_after_each:  # type: ignore[attr-defined]
            # As a server does when a kept-alive connection has been idle too long: it closes
            # it without saying so in the response.
            self.close_connection = True

    def log_message(self, *_args: object) -> None:
        pass


class _CountingServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, close_after_each: bool) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)
        self.connections = 0
        self.answered = 0
        self.close_after_each = close_after_each

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: object
    ) -> None:
        self.connections += 1
        super().process_request(request, client_address)  # type: ignore[arg-type]


@contextmanager
def echo_server(close_after_each: bool = False) -> Iterator[tuple[_CountingServer, str]]:
    server = _CountingServer(close_after_each)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def raw_server(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """One connection, answered by `answer` with whatever bytes it writes."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            answer(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        thread.join(5)
        listener.close()


def client(url: str, timeout_s: float = 5.0) -> HttpClient:
    return HttpClient(url, timeout_s=timeout_s, connect_timeout_s=2.0)


def test_requests_share_one_kept_alive_connection() -> None:
    with echo_server() as (server, url), client(url + "/api") as http:
        answers = [http.send("POST", "/echo", content=f"body {i}".encode()).content for i in range(5)]
        assert http.send("GET", "/path").text == "/api/path"
    assert answers == [f"body {i}".encode() for i in range(5)]
    assert server.connections == 1


def test_a_connection_the_server_closed_is_replaced_and_the_request_sent_again() -> None:
    with echo_server(close_after_each=True) as (server, url), client(url) as http:
        first = http.send("POST", "/", content=b"one")
        second = http.send("POST", "/", content=b"two")
    assert (first.content, second.content) == (b"one", b"two")
    assert server.connections == 2
    assert server.answered == 2


def test_a_kept_alive_post_does_not_wait_for_a_delayed_ack() -> None:
    stall = delayed_ack_stall(nodelay=False)
    # The reference only means something if the stall shows on this machine's loopback.
    assert stall > 10 * delayed_ack_stall(nodelay=True), "no delayed-ACK stall to compare with"
    with echo_server() as (_server, url), client(url) as http:
        round_trip = median_round_trip(lambda: http.send("POST", "/", content=b"x" * 2000))
    assert round_trip < MAX_SHARE_OF_STALL * stall, (
        f"kept-alive POST {round_trip * 1000:.2f} ms vs delayed-ACK stall {stall * 1000:.2f} ms"
    )


CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n\r\n"


@pytest.mark.parametrize(
    ("parts", "lines"),
    [
        ([CHUNKED_HEAD, b"7\r\ndata:1\n\r\n", b"8\r\ndata:2\r\n\r\n", b"0\r\n\r\n"], ["data:1", "data:2"]),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nline1\nline2\n"], ["line1", "line2"]),
    ],
    ids=["chunked", "with length"],
)
def test_a_whole_body_is_read_line_by_line(parts: list[bytes], lines: list[str]) -> None:
    with (
        raw_server(lambda connection: connection.sendall(b"".join(parts))) as url,
        client(url) as http,
        closing(http.send("GET", "/", stream=True)) as response,
    ):
        assert list(response.iter_lines()) == lines


@pytest.mark.parametrize(
    "parts",
    [
        [CHUNKED_HEAD, b"7\r\ndata:1\n\r\n", b"10\r\ndata: partial"],
        [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nline1\nline2"],
    ],
    ids=["chunked", "with length"],
)
def test_a_body_cut_short_is_an_error_not_an_answer(parts: list[bytes]) -> None:
    for read_whole in (False, True):
        with (
            raw_server(lambda connection: connection.sendall(b"".join(parts))) as url,
            client(url) as http,
            closing(http.send("GET", "/", stream=True)) as response,
            pytest.raises(HttpError, match="broke off"),
        ):
            if read_whole:
                response.read()
            else:
                list(response.iter_lines())


def test_a_refused_connection_is_connect_failed() -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    with client(f"http://127.0.0.1:{port}") as http, pytest.raises(ConnectFailed, match="cannot connect"):
        http.send("GET", "/")


def test_a_server_that_never_answers_times_out() -> None:
    silent = threading.Event()
    with raw_server(lambda _connection: silent.wait(5)) as url, client(url, timeout_s=0.3) as http:
        with pytest.raises(HttpError, match="timed out"):
            http.send("GET", "/")
        silent.set()


def test_only_http_urls_are_taken() -> None:
    with pytest.raises(ValueError, match="not an http"):
        HttpClient("ftp://example.invalid/", timeout_s=1, connect_timeout_s=1)

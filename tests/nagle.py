"""The delayed-ACK stall of this machine's loopback, measured, for tests that require a kept-alive
round trip to be a small fraction of it (so that they hold on a slow or busy machine and fail on
the stall alone)."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from typing import Any

ROUNDS = 30
WARM_UP = 5


def _two_part_echo(server: socket.socket, nodelay: bool) -> None:
    conn, _ = server.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(nodelay))
    with conn:
        while data := conn.recv(64):
            conn.sendall(data[:1])
            conn.sendall(data[1:])


def median_round_trip(send: Any) -> float:
    times = []
    for i in range(WARM_UP + ROUNDS):
        started = time.perf_counter()
        send()
        if i >= WARM_UP:
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def delayed_ack_stall(nodelay: bool) -> float:
    """Median round trip of a loopback echo that answers in two writes."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    thread = threading.Thread(target=_two_part_echo, args=(server, nodelay), daemon=True)
    thread.start()
    with socket.create_connection(server.getsockname()) as client:

        def echo() -> None:
            client.sendall(b"ping")
            received = b""
            while len(received) < 4:
                received += client.recv(64)

        median = median_round_trip(echo)
    thread.join(5)
    server.close()
    return median

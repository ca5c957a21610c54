"""A TCP relay: `python3 -m agent_runtime.relay LISTEN_PORT TARGET_HOST TARGET_PORT`.

On Docker Swarm each agent sits alone on an internal overlay network, from which nothing on a
host is reachable. The relay is the one other member of every such network, and it carries
connections to exactly one place: the orchestrator's agent port. It reads nothing of what it
carries (requests are authenticated end to end by each agent's bearer token), so it needs no
secret; it only bounds how many connections it holds open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys

log = logging.getLogger("flotilla.relay")

MAX_CONNECTIONS = 4096
CONNECT_TIMEOUT_S = 10.0
CHUNK = 65536


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()


class Relay:
    def __init__(self, target_host: str, target_port: int, max_connections: int = MAX_CONNECTIONS) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self._slots = asyncio.Semaphore(max_connections)

    async def handle(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        if self._slots.locked():
            client_writer.close()
            return
        async with self._slots:
            try:
                upstream_reader, upstream_writer = await asyncio.wait_for(
                    asyncio.open_connection(self.target_host, self.target_port), CONNECT_TIMEOUT_S
                )
            except (OSError, TimeoutError) as exc:
                log.warning("cannot reach %s:%d: %s", self.target_host, self.target_port, exc)
                client_writer.close()
                return
            try:
                await asyncio.gather(
                    _pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer)
                )
            finally:
                for writer in (client_writer, upstream_writer):
                    writer.close()


async def serve(listen_port: int, target_host: str, target_port: int) -> None:
    relay = Relay(target_host, target_port)
    server = await asyncio.start_server(relay.handle, "0.0.0.0", listen_port, reuse_address=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    log.info("relaying :%d to %s:%d", listen_port, target_host, target_port)
    async with server:
        await stop.wait()


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    try:
        listen_port, target_host, target_port = int(argv[0]), argv[1], int(argv[2])
    except (IndexError, ValueError):
        print("usage: python3 -m agent_runtime.relay LISTEN_PORT TARGET_HOST TARGET_PORT", file=sys.stderr)
        return 2
    asyncio.run(serve(listen_port, target_host, target_port))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

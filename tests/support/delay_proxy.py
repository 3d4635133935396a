"""A TCP proxy that delays every byte by a fixed time each way (a userspace netem).

``python delay_proxy.py LISTEN_HOST LISTEN_PORT TARGET_HOST TARGET_PORT DELAY_MS``

Each chunk read from one side is written to the other *DELAY_MS* after it
arrived, in order, so the round trip through the proxy grows by twice the
delay while the bandwidth stays.  Tests run it inside their own network
namespace, in front of a database server there.
"""

from __future__ import annotations

import asyncio
import sys


async def _pump(reader, writer, delay: float) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()

    async def deliver() -> None:
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                writer.close()
                return
            writer.write(data)
            await writer.drain()

    sender = asyncio.create_task(deliver())
    try:
        while data := await reader.read(65536):
            queue.put_nowait((loop.time() + delay, data))
    finally:
        queue.put_nowait((loop.time() + delay, b""))
        await sender


async def _serve(listen: tuple[str, int], target: tuple[str, int], delay: float) -> None:
    async def connect(client_reader, client_writer) -> None:
        server_reader, server_writer = await asyncio.open_connection(*target)
        await asyncio.gather(
            _pump(client_reader, server_writer, delay),
            _pump(server_reader, client_writer, delay),
            return_exceptions=True,
        )

    server = await asyncio.start_server(connect, *listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    host, port, target_host, target_port, delay_ms = sys.argv[1:]
    asyncio.run(_serve((host, int(port)), (target_host, int(target_port)), float(delay_ms) / 1000))

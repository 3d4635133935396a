"""A TCP proxy that delays every byte by a fixed time each way (a userspace netem).

``python delay_proxy.py [--listen-netns NAME] LISTEN_HOST LISTEN_PORT TARGET_HOST
TARGET_PORT DELAY_MS``

Each chunk read from one side is written to the other *DELAY_MS* after it
arrived, in order, so the round trip through the proxy grows by twice the
delay while the bandwidth stays.  Tests run it inside their own network
namespace, in front of a database server there.

With ``--listen-netns NAME`` the proxy, started in the root namespace,
listens inside the test's namespace *NAME* and connects from where it runs:
a test host's address then reaches a server on the root namespace's
loopback (the machine's own PostgreSQL, say) without any address or route
added outside the test's namespaces.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import socket
import sys

CLONE_NEWNET = 0x40000000  # from <sched.h>


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


def _setns(fd: int) -> None:
    # os.setns exists from Python 3.12 on; the libc call does the same before.
    if hasattr(os, "setns"):
        os.setns(fd, CLONE_NEWNET)
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _listen_in(namespace: str, address: tuple[str, int]) -> socket.socket:
    """A listening socket made inside *namespace*; the calling thread returns home after.

    A socket stays in the namespace it was made in, so the proxy accepts
    there and connects (later, from home) to the root namespace's servers.
    """
    with open("/proc/self/ns/net") as home, open(f"/run/netns/{namespace}") as there:
        _setns(there.fileno())
        try:
            return socket.create_server(address)
        finally:
            _setns(home.fileno())


async def _serve(
    listen: tuple[str, int], target: tuple[str, int], delay: float, namespace: str | None
) -> None:
    async def connect(client_reader, client_writer) -> None:
        server_reader, server_writer = await asyncio.open_connection(*target)
        await asyncio.gather(
            _pump(client_reader, server_writer, delay),
            _pump(server_reader, client_writer, delay),
            return_exceptions=True,
        )

    if namespace:
        server = await asyncio.start_server(connect, sock=_listen_in(namespace, listen))
    else:
        server = await asyncio.start_server(connect, *listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    arguments = sys.argv[1:]
    namespace = None
    if arguments[0] == "--listen-netns":
        namespace, arguments = arguments[1], arguments[2:]
    host, port, target_host, target_port, delay_ms = arguments
    asyncio.run(
        _serve(
            (host, int(port)),
            (target_host, int(target_port)),
            float(delay_ms) / 1000,
            namespace,
        )
    )

"""What does the delaying proxy cost at no delay?  Round trips through it against direct ones.

Not a test: a measurement to run by hand, on a quiet machine, and paste
into a report.  A TCP echo server runs in a process of its own; a client
sends a small message and waits for it back, in blocks of round trips
that alternate between the direct connection and the same connection
through zodbshootout's proxy (``zodbshootout.network.process``) at no added
delay.  It prints, per path, the median round trip and its spread (10th
to 90th percentile) in µs, the median of the added time per block, the
CPU time the forwarding process spent per round trip (all its threads, from
the kernel's ``/proc/PID/task/*/schedstat``: steadier than the wall-clock
figures on a busy machine, and what a run whose cores are all busy pays),
and the load average before and after.  The issue's bar: at most 50 µs
added.

With ``--gap 300``, the client works (busily) 300 µs between two round
trips, as a ZODB client decoding what it loaded does: the proxy's threads
then wake up cold each time, which on a busy virtual machine costs several
times what back-to-back round trips show (the echo server's wake-up too).

With ``--alternatives``, minimal forwarders of the other designs run
beside it, each in its own process, for comparison: an asyncio loop of
protocols, a ``selectors`` loop, and uvloop when it is installed.  With
``--rtt 2ms`` (a ladder as ``--rtt`` takes it) it also prints the round
trip added at each step through the proxy, against the step.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/proxy_overhead.py
    python benchmarks/proxy_overhead.py --blocks 40 --alternatives --rtt 0.5,2,10ms
    python benchmarks/proxy_overhead.py --blocks 5 --gap 300
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import os
import selectors
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from zodbshootout.network.delays import parse_rtt_ladder
from zodbshootout.network.process import ProxyProcess

Address = tuple[str, int]


# -- the servers (each runs as ``proxy_overhead.py --serve KIND [PORT]``) --


def _listen() -> socket.socket:
    listener = socket.create_server(("127.0.0.1", 0))
    print(listener.getsockname()[1], flush=True)
    return listener


def _nodelay(sock: socket.socket) -> socket.socket:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def serve_echo() -> None:
    """Echo every connection in a thread of its own, with blocking sockets."""
    listener = _listen()

    def echo(connection: socket.socket) -> None:
        _nodelay(connection)
        while data := connection.recv(65536):
            connection.sendall(data)

    while True:
        connection, _ = listener.accept()
        threading.Thread(target=echo, args=(connection,), daemon=True).start()


def serve_selectors(target: Address) -> None:
    """A forwarder on one ``selectors`` loop (non-blocking reads, blocking writes)."""
    listener = _listen()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    while True:
        for key, _ in selector.select():
            if key.data is None:
                client = _nodelay(listener.accept()[0])
                server = _nodelay(socket.create_connection(target))
                selector.register(client, selectors.EVENT_READ, server)
                selector.register(server, selectors.EVENT_READ, client)
                continue
            source = key.fileobj
            assert isinstance(source, socket.socket)
            data = source.recv(65536)
            if not data:
                selector.unregister(source)
                key.data.shutdown(socket.SHUT_WR)
                continue
            key.data.sendall(data)


class _Forward(asyncio.Protocol):
    def __init__(self) -> None:
        self.peer: _Forward | None = None
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        assert self.peer is not None
        self.peer.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.peer is not None:
            self.peer.transport.close()


def serve_asyncio(target: Address, uvloop: bool) -> None:
    """A forwarder of asyncio protocols (each chunk written from data_received)."""
    listener = _listen()

    async def main() -> None:
        loop = asyncio.get_running_loop()

        class Front(_Forward):
            def connection_made(self, transport: Any) -> None:
                super().connection_made(transport)
                transport.pause_reading()
                self.connecting = loop.create_task(self.connect())

            async def connect(self) -> None:
                _, back = await loop.create_connection(_Forward, *target)
                back.peer, self.peer = self, back
                self.transport.resume_reading()

        server = await loop.create_server(Front, sock=listener)
        await server.serve_forever()

    if uvloop:
        import uvloop as module  # optional: only for this comparison

        module.run(main())
    else:
        asyncio.run(main())


# -- the client --


def _start(*args: str) -> tuple[subprocess.Popen, Address]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve", *args],
        stdin=subprocess.PIPE,  # its lifeline (see _serve)
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, ("127.0.0.1", int(process.stdout.readline()))


#: --gap: the client's own work between two round trips, in seconds (busy, as a
#: ZODB client decoding an object is).
GAP = {"seconds": 0.0}


def round_trips(sock: socket.socket, count: int, size: int) -> list[float]:
    """*count* round trips of *size* bytes on *sock*, each in seconds (--gap between them)."""
    message = b"z" * size
    durations = []
    for _ in range(count):
        start = time.perf_counter()
        sock.sendall(message)
        received = 0
        while received < size:
            received += len(sock.recv(65536))
        end = time.perf_counter()
        durations.append(end - start)
        while time.perf_counter() < end + GAP["seconds"]:
            pass
    return durations


def _summary(name: str, durations: list[float], added: list[float] | None) -> str:
    deciles = statistics.quantiles(durations, n=10)
    line = (
        f"{name:12} median {statistics.median(durations) * 1e6:7.1f} µs   "
        f"p10-p90 {deciles[0] * 1e6:6.1f}-{deciles[-1] * 1e6:6.1f} µs"
    )
    if added is not None:
        spread = statistics.quantiles(added, n=4)
        line += (
            f"   added {statistics.median(added) * 1e6:+6.1f} µs "
            f"(blocks' IQR {spread[0] * 1e6:+.1f} to {spread[-1] * 1e6:+.1f})"
        )
    return line


def cpu_seconds(pid: int) -> float:
    """CPU time process *pid*'s live threads have run so far (Linux), in seconds."""
    total = 0
    for stat in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        with contextlib.suppress(OSError), open(stat) as file:
            total += int(file.read().split()[0])
    return total * 1e-9


def measure(
    paths: dict[str, Address], pids: dict[str, int], blocks: int, count: int, size: int
) -> None:
    """Alternate blocks over *paths* ('direct' first); print each path's figures.

    *pids*: the forwarding process of each path but the direct one, whose
    CPU time per round trip is printed too.
    """
    sockets = {name: _nodelay(socket.create_connection(address)) for name, address in paths.items()}
    durations: dict[str, list[float]] = {name: [] for name in paths}
    added: dict[str, list[float]] = {name: [] for name in paths}
    cpu: dict[str, float] = dict.fromkeys(paths, 0.0)
    for sock in sockets.values():
        round_trips(sock, 50, size)  # warm up
    for _ in range(blocks):
        block = {}
        for name, sock in sockets.items():
            before = cpu_seconds(pids[name]) if name in pids else 0.0
            block[name] = round_trips(sock, count, size)
            cpu[name] += cpu_seconds(pids[name]) - before if name in pids else 0.0
        direct = statistics.median(block["direct"])
        for name, values in block.items():
            durations[name] += values
            added[name].append(statistics.median(values) - direct)
    for name in paths:
        line = _summary(name, durations[name], None if name == "direct" else added[name])
        if name in pids:
            line += f"   CPU {cpu[name] / (blocks * count) * 1e6:5.1f} µs/round trip"
        print(line)
    for sock in sockets.values():
        sock.close()


def measure_ladder(echo: Address, proxy: ProxyProcess, text: str, size: int) -> None:
    """The round trip added at each step of *text*, through *proxy*, against the step."""
    direct = _nodelay(socket.create_connection(echo))
    through = _nodelay(socket.create_connection(proxy.listening[0]))
    with direct, through:
        for step in parse_rtt_ladder(text):
            proxy.set_rtt(step)
            count = max(20, min(400, int(0.5 / max(step.rtt_seconds, 1e-4))))
            round_trips(through, 10, size)
            base = statistics.median(round_trips(direct, count, size))
            seen = statistics.median(round_trips(through, count, size))
            print(
                f"asked {step.label:>14}: added {(seen - base) * 1e3:8.3f} ms (median of {count})"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20, help="blocks per path (default 20)")
    parser.add_argument("--count", type=int, default=200, help="round trips per block")
    parser.add_argument("--bytes", type=int, default=64, help="message size (default 64)")
    parser.add_argument("--alternatives", action="store_true", help="also the other designs")
    parser.add_argument("--rtt", metavar="LADDER", help="also the added RTT at each step")
    parser.add_argument(
        "--gap",
        type=float,
        default=0.0,
        metavar="µS",
        help="the client's busy work between round trips (a ZEO cold read: about 300)",
    )
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        return _serve(args.serve)
    GAP["seconds"] = args.gap * 1e-6
    started: list[subprocess.Popen] = []
    echo_process, echo = _start("echo")
    started.append(echo_process)
    try:
        with ProxyProcess([echo]) as proxy:
            paths = {"direct": echo, "proxy": proxy.listening[0]}
            pids = {"proxy": proxy.pid}
            if args.alternatives:
                paths.update(_alternatives(echo, started, pids))
            before = os.getloadavg()
            measure(paths, pids, args.blocks, args.count, args.bytes)
            after = os.getloadavg()
            cpus = os.cpu_count()
            print(f"load average {before[0]:.2f} before, {after[0]:.2f} after ({cpus} CPUs)")
            if args.rtt:
                measure_ladder(echo, proxy, args.rtt, args.bytes)
    finally:
        for process in started:
            process.kill()
            process.wait()
    return 0


def _alternatives(
    echo: Address, started: list[subprocess.Popen], pids: dict[str, int]
) -> dict[str, Address]:
    kinds = ["asyncio", "selectors"]
    try:
        import uvloop  # noqa: F401  (optional, for this comparison only)

        kinds.append("uvloop")
    except ImportError:
        print("uvloop is not installed: pip install uvloop to compare it too")
    found = {}
    for kind in kinds:
        process, address = _start(kind, str(echo[1]))
        started.append(process)
        found[kind] = address
        pids[kind] = process.pid
    return found


def _serve(what: list[str]) -> int:
    """Run a server until this script is gone (its standard input ends)."""

    def lifeline() -> None:
        while os.read(sys.stdin.fileno(), 4096):
            pass
        os._exit(0)

    threading.Thread(target=lifeline, daemon=True).start()
    servers: dict[str, Callable[[], None]] = {
        "echo": serve_echo,
        "selectors": lambda: serve_selectors(("127.0.0.1", int(what[1]))),
        "asyncio": lambda: serve_asyncio(("127.0.0.1", int(what[1])), uvloop=False),
        "uvloop": lambda: serve_asyncio(("127.0.0.1", int(what[1])), uvloop=True),
    }
    servers[what[0]]()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Small TCP servers of the tests' own, on 127.0.0.1, to put behind the delaying proxy.

- :class:`EchoServer`: sends back what it reads; :func:`ping` times round
  trips through it (an independent measure of the RTT a path adds).
- :class:`StreamServer`: per connection, reads a header (seed, length),
  then at once sends ``length`` random bytes of its own (from ``seed + 1``)
  while it reads the client's stream to its end, and finally sends the
  SHA-256 of what it read and closes: a client checks both directions.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import socket
import statistics
import struct
import threading
import time

HEADER = struct.Struct("!QQ")  # seed, length


class _Server:
    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0), backlog=256)
        self.address = self.listener.getsockname()[:2]
        self.errors: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._guarded, args=(connection,), daemon=True).start()

    def _guarded(self, connection: socket.socket) -> None:
        try:
            with connection:
                self.serve(connection)
        except OSError as e:
            self.errors.append(repr(e))

    def serve(self, connection: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class EchoServer(_Server):
    def serve(self, connection: socket.socket) -> None:
        while data := connection.recv(65536):
            connection.sendall(data)


def random_bytes(seed: int, length: int) -> bytes:
    return random.Random(seed).randbytes(length)


class StreamServer(_Server):
    def serve(self, connection: socket.socket) -> None:
        seed, length = HEADER.unpack(_read_exactly(connection, HEADER.size))
        sending = threading.Thread(
            target=connection.sendall, args=(random_bytes(seed + 1, length),), daemon=True
        )
        sending.start()
        digest = hashlib.sha256()
        while data := connection.recv(65536):
            digest.update(data)
        sending.join()
        connection.sendall(digest.digest())


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        data = sock.recv(size)
        if not data:
            raise EOFError("the stream ended early")
        chunks.append(data)
        size -= len(data)
    return b"".join(chunks)


def check_stream(address: tuple[str, int], seed: int, length: int) -> None:
    """One connection's two streams through *address*: AssertionError if a byte differs.

    The client writes its stream in chunks of random sizes, then half-closes.
    """
    sent = random_bytes(seed, length)
    draw = random.Random(seed)
    with socket.create_connection(address, timeout=60) as sock:
        received: list[bytes] = []

        def receive() -> None:
            while data := sock.recv(65536):
                received.append(data)

        receiving = threading.Thread(target=receive, daemon=True)
        receiving.start()
        sock.sendall(HEADER.pack(seed, length))
        position = 0
        while position < length:
            size = draw.choice((1, 7, 1500, 65536, 300_000))
            sock.sendall(sent[position : position + size])
            position += size
        sock.shutdown(socket.SHUT_WR)
        receiving.join(60)
    everything = b"".join(received)
    assert len(everything) == length + 32, (len(everything), length + 32)
    assert everything[:length] == random_bytes(seed + 1, length), "server → client differs"
    assert everything[length:] == hashlib.sha256(sent).digest(), "client → server differs"


def ping(address: tuple[str, int], count: int = 30, size: int = 32) -> float:
    """The median round trip, in seconds, of *size* bytes through an echo at *address*."""
    message = b"p" * size
    durations = []
    with socket.create_connection(address) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for index in range(count + 3):
            start = time.perf_counter()
            sock.sendall(message)
            _read_exactly(sock, size)
            if index >= 3:  # the first ones warm the path up
                durations.append(time.perf_counter() - start)
    return statistics.median(durations)


def added_round_trip(direct: tuple[str, int], through: tuple[str, int], count: int) -> float:
    """The round trip *through* adds to *direct*: the best of 5 alternated medians each.

    Alternating keeps a burst of load on the machine from landing on one
    side only, and the best of each side is the one load disturbed least
    (load only ever adds time).
    """
    pairs = [(ping(through, count), ping(direct, count)) for _ in range(5)]
    return min(p[0] for p in pairs) - min(p[1] for p in pairs)

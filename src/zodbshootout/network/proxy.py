"""The delaying TCP proxy: ``python -m zodbshootout.network.proxy``, a process of its own.

It listens on 127.0.0.1 (a port the kernel picks) for each target it is
given, and forwards every connection to its target, byte for byte.  Each
direction delays what it reads by half the round trip asked: a chunk read
at *t* is written at *t + d*, in the order read, the way netem's delay
works, without throttling (reading goes on while earlier chunks wait).
With a jitter *J*, each chunk's one-way delay is drawn uniformly in
``d ± J/2``; a chunk never overtakes the one before it (it waits for it
instead), so the bytes keep their order.  At most MAX_QUEUED_BYTES wait per
direction; beyond that the proxy stops reading and TCP's own flow control
holds the sender.

Why threads with blocking sockets, in a process of their own: at no delay
each direction is ``recv`` then ``sendall`` in one thread, the fewest steps
a Python proxy can take (benchmarks/proxy_overhead.py measured it against
asyncio, uvloop and a selectors loop: see docs/network.rst); a delayed
chunk is written by a second thread that sleeps until it is due with
``time.sleep`` (nanosecond timers, the process's timer slack lowered to
1 ns), where event loops wake on millisecond timeouts.  A process of its
own so that no worker's interpreter lock stands between a packet and the
wire.

The control protocol, one JSON object per line: the owner writes
``{"targets": [[host, port], ...], "rtt_seconds": R, "jitter_seconds": J}``
(and ``"ports": [port, ...]``, where to listen, when it must be there) on
standard input; the proxy answers ``{"listening": [[host, port], ...]}``
(or ``{"error": why}``) on standard output.  Each later
``{"rtt_seconds": R, "jitter_seconds": J}`` changes the delay of the
chunks read from then on and is answered with the same object.  Standard
input is the lifeline: at its end -- the owner closed it, or died, even by
SIGKILL -- the proxy closes every socket and exits.  SIGTERM does the same;
SIGINT is ignored (Ctrl-C reaches the whole process group; the owner
decides when the proxy stops).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import json
import os
import random
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, TextIO

Address = tuple[str, int]

LISTEN_HOST = "127.0.0.1"
#: Bytes read at once: one recv per message for the protocols measured.
CHUNK_BYTES = 1 << 16
#: Bytes waiting to be written per direction before the proxy stops reading
#: (10 ms of delay at 1.6 GB/s).
MAX_QUEUED_BYTES = 16 << 20
CONNECT_TIMEOUT_SECONDS = 10.0
#: A thread's stack: the proxy's threads call nothing deep.
THREAD_STACK_BYTES = 256 << 10
_PR_SET_TIMERSLACK = 29  # from <linux/prctl.h>
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # from <asm/socket.h>
_TIMESPEC = struct.Struct("qq")  # struct timespec on 64-bit Linux
_STAMP_SPACE = socket.CMSG_SPACE(_TIMESPEC.size)


@dataclass(frozen=True)
class Delay:
    """What each direction adds: half the round trip, with half its jitter either side."""

    rtt_seconds: float = 0.0
    jitter_seconds: float = 0.0

    def one_way(self, draw: random.Random) -> float:
        """One chunk's delay in seconds (uniform within ± jitter/2 of rtt/2)."""
        half = self.jitter_seconds / 2
        base = self.rtt_seconds / 2
        return base + draw.uniform(-half, half) if half else base


class Proxy:
    """Listeners for *targets* on 127.0.0.1, each forwarding to its target with *delay*.

    *ports*: the port each listens on (one per target; none: the kernel
    picks), so that proxies on several hosts are reached at the same
    addresses, each on its own host's loopback.
    """

    def __init__(self, targets: Sequence[Address], delay: Delay, ports: Sequence[int] = ()) -> None:
        self.delay = delay
        self._connections: set[_Connection] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._listeners: list[socket.socket] = []
        try:
            for target, port in zip(targets, list(ports) or [0] * len(targets), strict=True):
                listener = socket.create_server((LISTEN_HOST, port), backlog=512)
                self._listeners.append(listener)
                threading.Thread(
                    target=self._accept, args=(listener, target), daemon=True, name="accept"
                ).start()
        except BaseException:
            self.close()
            raise

    @property
    def listening(self) -> list[Address]:
        """Where each target is reached through the proxy, in the targets' order."""
        return [listener.getsockname()[:2] for listener in self._listeners]

    def _accept(self, listener: socket.socket, target: Address) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            connection = _Connection(self, client, target)
            with self._lock:
                if self._closed:
                    client.close()
                    return
                self._connections.add(connection)
            threading.Thread(target=connection.run, daemon=True, name="connection").start()

    def forget(self, connection: _Connection) -> None:
        with self._lock:
            self._connections.discard(connection)

    def close(self) -> None:
        """Stop listening and cut every connection (both ends see it close)."""
        with self._lock:
            self._closed = True
            connections = list(self._connections)
        for listener in self._listeners:
            _shut(listener)
        for connection in connections:
            connection.abort()


class _Connection:
    """A client's connection and the proxy's own to the target, joined both ways."""

    def __init__(self, proxy: Proxy, client: socket.socket, target: Address) -> None:
        self.proxy = proxy
        self.client = client
        self.target = target
        self.server: socket.socket | None = None
        self._lock = threading.Lock()
        self._open_directions = 2
        self._aborted = False

    def run(self) -> None:
        """Connect to the target, then carry client → server in this thread."""
        try:
            server = socket.create_connection(self.target, timeout=CONNECT_TIMEOUT_SECONDS)
            server.settimeout(None)
        except OSError:
            self.abort()  # the client sees its connection closed, as with a refused one
            return
        for sock in (self.client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        with self._lock:
            self.server = server
            if self._aborted:
                _shut(server)
                return
        back = _Direction(self, server, self.client)
        threading.Thread(target=back.read, daemon=True, name="server-to-client").start()
        _Direction(self, self.client, server).read()

    def direction_done(self) -> None:
        """One direction delivered its end; after both, the sockets are closed."""
        with self._lock:
            self._open_directions -= 1
            last = self._open_directions == 0
        if last:
            self.abort()

    def abort(self) -> None:
        """Close both sockets at once (an error either side, or the proxy's end)."""
        with self._lock:
            self._aborted = True
            sockets = [self.client] + ([self.server] if self.server else [])
        for sock in sockets:
            _shut(sock)
        self.proxy.forget(self)


class _Direction:
    """One direction of a connection: read chunks, write each when it is due.

    The reading thread writes a chunk itself when nothing is waiting and no
    delay applies (the no-delay path: recv, sendall); otherwise it queues the
    chunk with its due time and a sender thread, started on first need,
    writes the queue in order.  The sender removes a chunk only once it is
    written, so the reader never writes past a chunk still being written.
    """

    def __init__(self, connection: _Connection, source: socket.socket, sink: socket.socket) -> None:
        self.connection = connection
        self.source = source
        self.sink = sink
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.queued_bytes = 0
        self.last_due = 0.0
        self.draw = random.Random()
        self.ready = threading.Condition()
        self.sender: threading.Thread | None = None
        self.stopped = False

    def read(self) -> None:
        try:
            while True:
                if self._relay_undelayed():
                    return
                delay = self.connection.proxy.delay
                if delay.rtt_seconds:
                    data, arrived = _receive_stamped(self.source)
                    due = arrived + delay.one_way(self.draw)
                else:
                    data = self.source.recv(CHUNK_BYTES)
                    due = 0.0
                if not self._forward(data, due) or not data:
                    return
        except OSError:
            self._stop()

    def _relay_undelayed(self) -> bool:
        """Carry chunks straight through while no delay applies and none waits; True at the end.

        The no-delay path, as few steps per chunk as a Python proxy can take
        (its cost is the proxy's whole cost at 0 ms): ``recv`` then
        ``sendall``, with no lock, clock or call between them.  The queue is
        only ever filled by this thread, and a chunk leaves it only once
        written, so an empty queue means every earlier chunk is out.
        Returns False as soon as a delay applies (or chunks wait), for the
        delayed path to take over.
        """
        proxy, queue = self.connection.proxy, self.queue
        receive, send = self.source.recv, self.sink.sendall
        while not proxy.delay.rtt_seconds and not queue:
            data = receive(CHUNK_BYTES)
            if not data:
                self._write(data)
                return True
            send(data)
        return False

    def _forward(self, data: bytes, due: float) -> bool:
        """Write *data* (b"": the end) at once, or queue it until *due* (monotonic seconds).

        False once the connection is cut.
        """
        now = time.monotonic()
        with self.ready:
            if self.stopped:
                return False
            if due > now or self.queue:
                self.last_due = due = max(due, self.last_due)
                self.queue.append((due, data))
                self.queued_bytes += len(data)
                self._start_sender()
                self.ready.notify_all()
                while self.queued_bytes > MAX_QUEUED_BYTES and not self.stopped:
                    self.ready.wait()
                return not self.stopped
            self.last_due = now
        return self._write(data)

    def _start_sender(self) -> None:
        if self.sender is None:
            self.sender = threading.Thread(target=self._send, daemon=True, name="delayed")
            self.sender.start()

    def _send(self) -> None:
        while True:
            with self.ready:
                while not self.queue and not self.stopped:
                    self.ready.wait()
                if self.stopped:
                    return
                due, data = self.queue[0]
            _sleep_until(due)
            if not self._write(data):
                return
            with self.ready:
                self.queue.popleft()
                self.queued_bytes -= len(data)
                self.ready.notify_all()
            if not data:
                return

    def _write(self, data: bytes) -> bool:
        """Write *data* to the sink, or pass the end on; False when the connection is cut."""
        try:
            if data:
                self.sink.sendall(data)
                return True
            self.sink.shutdown(socket.SHUT_WR)
        except OSError:
            self._stop()
            return False
        self.connection.direction_done()
        return True

    def _stop(self) -> None:
        with self.ready:
            self.stopped = True
            self.ready.notify_all()
        self.connection.abort()


def _receive_stamped(sock: socket.socket) -> tuple[bytes, float]:
    """A chunk, and when its last packet arrived (monotonic seconds, from the kernel's stamp).

    So a chunk's delay counts from its arrival, not from when this thread
    woke to read it.  The stamp is wall-clock time (SO_TIMESTAMPNS); a stamp
    that the wall clock's steps make absurd counts as arriving now.
    """
    data, ancillary, _flags, _address = sock.recvmsg(CHUNK_BYTES, _STAMP_SPACE)
    now, wall = time.monotonic(), time.time()
    for level, kind, stamp in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(stamp) >= 16:
            seconds, nanoseconds = _TIMESPEC.unpack_from(stamp)
            waited = wall - (seconds + nanoseconds * 1e-9)
            if 0 <= waited < 1:
                return data, now - waited
    return data, now


class _Lateness:
    """How late a sleep usually ends here at least (seconds): the next ones end that much earlier.

    A sleep ends when the kernel wakes the thread, some tens of µs after
    its timer (more on a virtual machine); left alone, that would add to
    every delay.  The estimate follows the low end of the recent samples --
    down at once, up slowly -- and never exceeds CEILING_SECONDS, so that a
    sleep rarely ends before its chunk is due, and then by little (the rest
    is waited out in :func:`_sleep_until`).  One estimate for the process,
    updated by every sleep; a race between two updates loses one sample.
    """

    RISE = 0.02
    CEILING_SECONDS = 0.1e-3

    def __init__(self) -> None:
        self.seconds = 0.0

    def observe(self, late_seconds: float) -> None:
        sample = min(max(late_seconds, 0.0), self.CEILING_SECONDS)
        if sample < self.seconds:
            self.seconds = sample
        else:
            self.seconds += self.RISE * (sample - self.seconds)


_lateness = _Lateness()


def _sleep_until(due: float) -> None:
    """Return at *due* (monotonic seconds) or just after, never before.

    The sleep ends early by the usual lateness; if the thread then wakes
    before *due*, it waits the rest out yielding the interpreter lock
    (``sleep(0)``), at most CEILING_SECONDS.
    """
    target = due - _lateness.seconds
    wait = target - time.monotonic()
    if wait > 0:
        time.sleep(wait)
        _lateness.observe(time.monotonic() - target)
    while time.monotonic() < due:
        time.sleep(0)


def _shut(sock: socket.socket) -> None:
    """Wake whatever thread waits on *sock*, then close it."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def lower_timer_slack() -> None:
    """Let sleeps end on time: Linux adds up to 50 µs of slack to a thread's timers.

    Threads started afterwards inherit it.  Elsewhere nothing happens.
    """
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)


def _delay_of(message: dict[str, Any]) -> Delay:
    rtt = float(message.get("rtt_seconds", 0.0))
    jitter = float(message.get("jitter_seconds", 0.0))
    if not (0 <= jitter <= rtt < float("inf")):
        raise ValueError(f"not a delay: {rtt!r} ± {jitter!r} s")
    return Delay(rtt, jitter)


def serve(control: BinaryIO, report: TextIO) -> None:
    """Run a proxy as *control*'s first line asks, until *control* ends."""

    def say(message: dict[str, Any]) -> None:
        report.write(json.dumps(message) + "\n")
        report.flush()

    request = json.loads(control.readline() or "{}")
    targets = [(str(host), int(port)) for host, port in request.get("targets", [])]
    proxy = Proxy(targets, _delay_of(request), [int(port) for port in request.get("ports", [])])
    try:
        say({"listening": proxy.listening})
        for line in control:
            message = json.loads(line)
            proxy.delay = _delay_of(message)
            say(message)
    finally:
        proxy.close()


def _terminate(*_args: object) -> None:
    raise SystemExit(0)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _terminate)
    lower_timer_slack()
    threading.stack_size(THREAD_STACK_BYTES)
    code = 0
    try:
        serve(sys.stdin.buffer, sys.stdout)
    except SystemExit:
        pass  # SIGTERM
    except (ValueError, TypeError, KeyError, OSError) as e:
        message = " ".join(str(e).split())
        print(json.dumps({"error": f"{type(e).__name__}: {message}"}), flush=True)
        code = 1
    # Daemon threads may still be inside a socket call: leave without waiting for them.
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()

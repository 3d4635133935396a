"""The worker's side of ``--hosts``: what a fresh interpreter on a client host runs.

concurrency.hosts sends this module's source through an execnet gateway
(``remote_exec``); it runs there as ``__channelexec__`` with ``channel``
connected to the coordinator, and imports zodbshootout from that host's
own installation.  Every message is a tuple of plain data:

describe (one per host, at the start of a run)
    coordinator: ``("describe", request)`` → worker: the host's facts
    (:func:`describe_host`), then it exits.
task (one per worker and stage; any task of concurrency.task)
    coordinator: ``("task", lifeline, {"class": ..., "fields": ...})``;
    worker: ``("hello", place)``; a few ``("clock",)`` → ``("clock",
    time.time())`` to relate this host's clock to the coordinator's;
    ``("begin",)``; then per barrier the worker sends ``("ready",)`` and
    waits for ``("go",)`` or ``("abort",)``; while it runs it may send
    ``("progress", message)``; at the end it sends ``("ok", results,
    releases)`` (the task's plain results), ``("broken", why)`` or
    ``("error", why[, traceback])``.

The *lifeline* is a second channel on which nothing is ever sent: when it
closes — the coordinator closed it, or the connection broke because the
coordinator or its ssh died — the worker exits at once, so no worker
outlives its stage on any host.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from typing import Any

from zodbshootout import storages
from zodbshootout.concurrency.task import WorkerContext, decode_task, execute_and_reply
from zodbshootout.config.loader import ConfigSource
from zodbshootout.database.info import describe_database
from zodbshootout.database.open import open_database
from zodbshootout.redact import find_secrets, install_log_redaction, redact
from zodbshootout.results.metadata import environment


class ChannelBarrier:
    """The worker's end of the coordinator's ready/go barrier.

    Keeps the wall-clock time of every release, which the coordinator turns
    into the barrier's release skew across all hosts.
    """

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self.releases: list[float] = []

    def wait(self, timeout: float | None = None) -> int:
        self._channel.send(("ready",))
        try:
            message = self._channel.receive(timeout)
        except self._channel.TimeoutError:
            raise threading.BrokenBarrierError from None
        if message[0] != "go":
            raise threading.BrokenBarrierError
        self.releases.append(time.time())
        return 0

    def abort(self) -> None:
        try:
            self._channel.send(("abort",))
        except OSError:
            pass  # the coordinator is gone; the lifeline ends this process


def place() -> dict[str, Any]:
    """Where this process runs: host name, PID, and (on Linux) its network namespace."""
    try:
        namespace = os.readlink("/proc/self/ns/net")
    except OSError:
        namespace = None
    return {"hostname": socket.gethostname(), "pid": os.getpid(), "net_namespace": namespace}


def describe_host(request: dict[str, Any]) -> dict[str, Any]:
    """This host's environment and its round-trip time to each database (outside any stage)."""
    source = ConfigSource(**request["source"])
    secrets = find_secrets(source.text)
    latency: dict[str, float] = {}
    errors: dict[str, str] = {}
    for name, addresses in request["databases"].items():
        try:
            db = open_database(source, name, [tuple(a) for a in addresses], client_label="rtt")
            try:
                seconds = describe_database(db).get("latency_seconds")
            finally:
                db.close()
            if seconds is not None:
                latency[name] = seconds
        except Exception as e:
            errors[name] = redact(f"{type(e).__name__}: {e}", secrets)
    return {
        **place(),
        "environment": environment(),
        "latency_seconds": latency,
        "latency_errors": errors,
    }


def run_stage(channel: Any, lifeline: Any, plain_task: dict[str, Any]) -> None:
    """One worker's task, between the coordinator's barriers."""
    lifeline.setcallback(_exit_now, endmarker=None)
    _ignore_interrupts()
    task = decode_task(plain_task)
    install_log_redaction(find_secrets(task.source.text), said=storages.server_lost)
    channel.send(("hello", place()))
    while channel.receive()[0] == "clock":  # until ("begin",)
        channel.send(("clock", time.time()))
    barrier = ChannelBarrier(channel)
    context = WorkerContext(progress=lambda message: channel.send(("progress", message)))
    execute_and_reply(task, barrier, context, channel.send, lambda: (barrier.releases,))


def _ignore_interrupts() -> None:
    """Leave Ctrl-C to the coordinator, as the processes mode's workers do.

    A localhost worker shares the command's process group, so the terminal's
    SIGINT reaches it too; the coordinator then closes the lifelines.
    """
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:
        pass  # execnet runs this outside the main thread: the signal goes there


def _exit_now(_item: object) -> None:
    os._exit(1)


def serve(channel: Any) -> None:
    """Answer the coordinator's first message (see the module's docstring)."""
    message = channel.receive()
    if message[0] == "describe":
        channel.send(describe_host(message[1]))
    elif message[0] == "task":
        run_stage(channel, message[1], message[2])


if __name__ == "__channelexec__":
    serve(channel)  # type: ignore[name-defined]  # noqa: F821  (execnet's global)

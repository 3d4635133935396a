"""SIGINT and SIGTERM as KeyboardInterrupt, so that a run unwinds and keeps what it measured.

Every runner (run.skeleton) measures inside :func:`interruptible`: the
workers and servers stop on the way out, the temporary data directory is
removed, and the runner returns what was measured, marked interrupted with
the signal's name (docs/safety.rst: exit 130 or 143).  Before and after the
runner, :func:`sigterm_unwinds` makes SIGTERM unwind the command too.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

from zodbshootout.concurrency import processes


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C but with its own exit code."""


def _raise_terminated(_signum: int, _frame: Any) -> None:
    raise Terminated()


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` (a KeyboardInterrupt) in here.

    A command that set up anything (a temporary data directory, a
    configuration's servers) removes it on the way out, whenever the signal
    comes; the runner installs its own handler while it measures.
    """
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def interruptible(received: list[str]) -> Iterator[None]:
    """Turn SIGINT and SIGTERM into KeyboardInterrupt, noting which came first in *received*."""

    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may handle signals (a test's runner in a thread)
        return

    def handler(signum: int, _frame: Any) -> None:
        if not received:
            received.append(signal.Signals(signum).name)
        _quiet_gevent_hub()
        error = Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        if not processes.hold_interrupt(error):  # raised once a worker's start is over
            raise error

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _quiet_gevent_hub() -> None:
    """gevent's hub passes our interrupt on without printing it as an error.

    RelStorage's ``gevent sqlite3`` driver yields to gevent's hub from
    SQLite's progress handler, also outside ``--gevent``; a signal that
    comes while the hub runs raises there, and the hub prints the
    "error" with a traceback before it throws it into the main greenlet.
    It is the orderly stop this module makes of the signal, no error.
    """
    hub = sys.modules.get("gevent.hub")
    if hub is not None and not issubclass(KeyboardInterrupt, hub.Hub.NOT_ERROR):
        hub.Hub.NOT_ERROR = (*hub.Hub.NOT_ERROR, KeyboardInterrupt)


def signal_name(interrupt: KeyboardInterrupt) -> str:
    """The signal an interrupt that came outside :func:`interruptible` stands for."""
    return "SIGTERM" if isinstance(interrupt, Terminated) else "SIGINT"

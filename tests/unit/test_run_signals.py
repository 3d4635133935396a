"""run.signals: SIGINT and SIGTERM become the run's orderly stop, wherever they land.

A signal sent to this very process (no other process is started): while
the main thread waits in gevent's hub, as it does inside RelStorage's
``gevent sqlite3`` driver, whose SQLite progress handler is gevent.sleep.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest

from zodbshootout.run.signals import Terminated, interruptible

gevent = pytest.importorskip("gevent")


@pytest.mark.parametrize(
    ("signum", "error"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)]
)
def test_a_signal_while_gevents_hub_runs_stops_without_a_traceback(capfd, signum, error):
    received: list[str] = []
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signum))
    timer.start()
    with pytest.raises(error), interruptible(received):
        gevent.sleep(5)  # the hub runs the loop: the handler raises in the hub
    timer.join()
    assert received == [signal.Signals(signum).name]
    # gevent printed such an interrupt as its hub's error, with a traceback.
    assert "Traceback" not in capfd.readouterr().err


def test_an_interrupt_while_a_worker_starts_waits_for_the_start_to_end():
    """The handler's interrupt is held inside a worker's start and raised after it."""
    from zodbshootout.concurrency import processes

    assert not processes.hold_interrupt(KeyboardInterrupt())  # no start: raise it now
    steps = []

    def start() -> None:
        with processes._interrupts_held():
            steps.append(processes.hold_interrupt(KeyboardInterrupt()))
            steps.append("the start went on")

    with pytest.raises(KeyboardInterrupt):
        start()
    assert steps == [True, "the start went on"]
    assert not processes.hold_interrupt(KeyboardInterrupt())

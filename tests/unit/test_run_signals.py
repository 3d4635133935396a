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

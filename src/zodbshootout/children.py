"""The tool's own child interpreters: the package importable in them, their stderr kept.

An embedded ZEO server (storages.zeo.server), a delaying proxy
(network.process), the gevent session's child (concurrency.gevent) and a
timed maintenance operation (maintenance.maintain) each run in a new
interpreter that this process starts.  :func:`child_environment` makes the
package importable there even when it runs from a checkout;
:class:`PipedChild` is such a child whose standard input and output are
pipes to this process (its input is its lifeline: it ends when this
process does, however it ends) and whose stderr is kept in a temporary file
to say why it failed.  :func:`when_closed` is how a child notices that end
without a thread of its own (a worker's lifeline uses it too).
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = ["PipedChild", "child_environment", "when_closed"]

C = TypeVar("C", bound="PipedChild")


def child_environment() -> dict[str, str]:
    """This process's environment, with this package importable in a child from a checkout too."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def when_closed(fd: int, gone: Callable[[], object]) -> None:
    """Call *gone* as soon as the other side of *fd* closes: by a signal, not a waiting thread.

    *fd*: a descriptor of this process's own (a pipe's reading end, or its
    end of a socket pair) on which the other side never sends.  When that
    side closes, *fd* reads EOF and the kernel tells this process with a
    signal (``O_ASYNC``: SIGIO to the owner), whose handler calls *gone* in
    the main thread.  A thread blocked on *fd* would do the same, but one
    more thread, even one that never wakes, makes every system call of the
    process release and retake the interpreter lock the long way.  Call it
    once per process, from the main thread, before any other thread starts.
    The kernel signals one owner per open file description, so the
    descriptor must be this process's alone.
    """

    def other_side_closed(_signum: int, _frame: Any) -> None:
        # SIGIO also says "there is room to write again" after a blocked send:
        # only a readable descriptor, which can only be EOF, means the end.
        if _readable(fd):
            gone()

    signal.signal(signal.SIGIO, other_side_closed)
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    other_side_closed(signal.SIGIO, None)  # closed before the signal was armed: none will come


def _readable(fd: int) -> bool:
    poller = select.poll()  # not select(): a worker's descriptor may be above 1023
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


class PipedChild:
    """A child running *command*: stdin and stdout piped, stderr kept; stopped by :meth:`stop`.

    The constructor does not wait for it; a subclass says how it stops
    (:meth:`stop`, also on leaving a ``with`` block).
    """

    def __init__(self, command: Sequence[str]) -> None:
        # Open for the child's lifetime; closed in stop().
        self._log = tempfile.TemporaryFile(mode="w+b")  # noqa: SIM115
        self._process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=child_environment(),
        )

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        return self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """Its exit code once it has stopped (negative: the signal that ended it)."""
        return self._process.poll()

    def read_line(self, timeout_seconds: float) -> bytes | None:
        """Its next line of output; b"" at the output's end, None when it exited or said
        nothing within *timeout_seconds* (``exit_code`` tells which).
        """
        stdout = self._process.stdout
        assert stdout is not None
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([stdout], [], [], 0.2)
            if ready:
                return stdout.readline()
            if self._process.poll() is not None:
                return None
        return None

    def close_input(self) -> None:
        """Close its standard input, as this process's death would; it then exits by itself."""
        stdin = self._process.stdin
        if stdin is not None and not stdin.closed:
            stdin.close()

    def last_stderr_line(self) -> str:
        """The last line it wrote to stderr, its own reason for failing ("" once stopped)."""
        if self._log.closed:
            return ""
        self._log.seek(0)
        lines = [ln for ln in self._log.read().decode(errors="replace").splitlines() if ln]
        return lines[-1] if lines else ""

    def stop(self) -> None:
        """Stop the child and close its pipes and its log (each kind of child its own way)."""
        raise NotImplementedError

    def __enter__(self: C) -> C:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

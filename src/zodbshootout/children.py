"""The tool's own child interpreters: the package importable in them, their stderr kept.

An embedded ZEO server (storages.zeo.server), a delaying proxy
(network.process), the gevent session's child (concurrency.gevent) and a
timed maintenance operation (maintenance.maintain) each run in a new
interpreter that this process starts.  :func:`child_environment` makes the
package importable there even when it runs from a checkout;
:class:`PipedChild` is such a child whose standard input and output are
pipes to this process (its input is its lifeline: it ends when this
process does, however it ends) and whose stderr is kept in a temporary file
to say why it failed.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import TypeVar

__all__ = ["PipedChild", "child_environment"]

C = TypeVar("C", bound="PipedChild")


def child_environment() -> dict[str, str]:
    """This process's environment, with this package importable in a child from a checkout too."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


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

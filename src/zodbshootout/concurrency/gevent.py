"""Gevent mode (``--gevent``): run a thread session in a child process that gevent monkey-patched.

gevent must patch ``socket``, ``threading`` and friends before anything
imports them, so neither the runner nor a test runner can be patched in
place.  The runner starts ``python -c`` with a two-line program that patches
first and only then imports this module (:func:`main`); this process talks
to it through its stdin and stdout with length-prefixed pickles:

    spec → ok | error         (the child opens a ThreadSession for the spec)
    ("populate", fill) → ok value | error
    ("stage", tasks, timeout) → ok StageOutcome | error
    ("close",) → ok, and the child exits

In the child, the worker threads are greenlets; RelStorage must use a driver
that cooperates with gevent (``gevent sqlite3``, PyMySQL, pg8000, gevent
MySQLdb, gevent psycopg2), otherwise every load would block all greenlets.
The child never outlives the runner: it exits when its stdin closes.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import IO, Any

from zodbshootout import storages
from zodbshootout.children import PipedChild
from zodbshootout.concurrency.task import OnProgress, StageOutcome
from zodbshootout.errors import CellError, UsageError, install_hint
from zodbshootout.workload.root import ForeignDataError

_PROGRAM = (
    "from gevent import monkey; monkey.patch_all(); "
    "from zodbshootout.concurrency.gevent import main; main()"
)
_HEADER = struct.Struct("!Q")
START_TIMEOUT_SECONDS = 120.0
STOP_TIMEOUT_SECONDS = 15.0
#: Seconds the child gets beyond a stage's own timeout to report it.
_REPLY_GRACE_SECONDS = 30.0


def gevent_missing() -> str | None:
    """Why --gevent can't run here, or None when gevent is installed."""
    if importlib.util.find_spec("gevent") is None:
        return f"--gevent needs gevent: {install_hint('gevent')}"
    return None


def require_gevent() -> None:
    """UsageError (nothing is run) when gevent is not installed."""
    problem = gevent_missing()
    if problem:
        raise UsageError(problem)


def _send(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_exactly(stream: IO[bytes], size: int, deadline: float | None) -> bytes:
    chunks = []
    while size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([stream], [], [], remaining)[0]:
                raise TimeoutError
        chunk = os.read(stream.fileno(), size)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _receive(stream: IO[bytes], deadline: float | None = None) -> Any:
    (size,) = _HEADER.unpack(_read_exactly(stream, _HEADER.size, deadline))
    return pickle.loads(_read_exactly(stream, size, deadline))


class GeventSession(PipedChild):
    """The runner's side: a concurrency.Session whose threads are greenlets in a child."""

    def __init__(self, spec: Any) -> None:
        problem = gevent_missing()
        if problem:
            raise CellError(problem)
        super().__init__([sys.executable, "-c", _PROGRAM])  # its stderr explains a crash
        self._closed = False
        self._busy = False  # a request is out: the child is not listening
        try:
            self._call(spec, START_TIMEOUT_SECONDS)
        except BaseException:
            self.close()
            raise

    def _call(self, message: Any, timeout_seconds: float) -> Any:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._busy = True
        try:
            _send(self._process.stdin, message)
            reply = _receive(self._process.stdout, time.monotonic() + timeout_seconds)
            self._busy = False
        except TimeoutError:
            self._stop()
            raise CellError(
                f"the gevent worker process did not answer within {timeout_seconds:g} s"
            ) from None
        except (EOFError, BrokenPipeError, OSError):
            self._stop()
            raise CellError(f"the gevent worker process died: {self._last_error()}") from None
        if reply[0] == "error":
            if reply[2:] == ("ForeignDataError",):
                raise ForeignDataError(reply[1])
            raise CellError(reply[1])
        return reply[1]

    def populate(self, fill: Callable[[Any], Any]) -> Any:
        return self._call(("populate", fill), START_TIMEOUT_SECONDS)

    def run_stage(
        self, tasks: Any, timeout_seconds: float, on_progress: OnProgress | None = None
    ) -> Any:
        """The stage in the child; its workers' progress stays there (no mode sends any yet)."""
        try:
            return self._call(
                ("stage", tasks, timeout_seconds), timeout_seconds + _REPLY_GRACE_SECONDS
            )
        except CellError as e:
            return StageOutcome(error=str(e))

    def _last_error(self) -> str:
        return self.last_stderr_line() or f"exit code {self._process.poll()}"

    def _stop(self) -> None:
        process = self._process
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def stop(self) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        process = self._process
        if process.poll() is None and not self._busy:
            try:
                assert process.stdin is not None
                _send(process.stdin, ("close",))
                process.stdin.close()
                process.wait(STOP_TIMEOUT_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._stop()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._log.close()


def check_gevent_driver(db: Any) -> None:
    """CellError when the storage would block every greenlet (see StorageKind.gevent_problem)."""
    problem = storages.kind_of(db.storage).gevent_problem(db.storage)
    if problem:
        raise CellError(f"--gevent: {problem}")


def main() -> None:
    """The child's loop (after monkey-patching): serve requests until told to close."""
    from zodbshootout.concurrency.threads import ThreadSession

    # Ctrl-C reaches the whole process group; the runner decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The protocol owns the real stdout; stray prints go to stderr instead.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    session = None
    try:
        spec = _receive(requests)
        try:
            session = ThreadSession(spec, check_db=check_gevent_driver)
            _send(replies, ("ok", None))
        except CellError as e:
            _send(replies, ("error", str(e)))
            return
        while True:
            try:
                message = _receive(requests)
            except EOFError:
                return
            if message[0] == "close":
                _send(replies, ("ok", None))
                return
            try:
                if message[0] == "populate":
                    _send(replies, ("ok", session.populate(message[1])))
                elif message[0] == "stage":
                    _send(replies, ("ok", session.run_stage(message[1], message[2])))
            except CellError as e:
                _send(replies, ("error", str(e), type(e).__name__))
            except Exception as e:
                traceback.print_exc()
                _send(replies, ("error", f"{type(e).__name__}: {e}"))
    finally:
        if session is not None:
            session.close()

"""Processes mode: run a stage in c worker processes that start each phase together.

The runner sends each worker a task (concurrency.task: a classic stage, a
mix worker, a floor's stage; pickled); the worker opens what it measures
itself, runs between barriers, and sends back the task's plain results,
which the task decodes here.  A worker that fails aborts the barrier so the
others stop at once; one that dies or hangs is noticed by the runner, which
stops the rest: nothing waits forever and no worker outlives its stage.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import logging
import multiprocessing
import multiprocessing.connection
import os
import queue
import signal
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection
from typing import Any, TypeVar, cast

from zodbshootout import storages
from zodbshootout.concurrency import lifeline
from zodbshootout.concurrency.session import SessionSpec
from zodbshootout.concurrency.task import (
    Barrier,
    OnProgress,
    ProgressFollower,
    StageOutcome,
    Task,
    WorkerContext,
    execute_and_reply,
)
from zodbshootout.database.open import open_database
from zodbshootout.errors import CellError
from zodbshootout.redact import find_secrets, install_log_redaction, redact

_log = logging.getLogger(__name__)

T = TypeVar("T")

# Modules the fork server imports once, so that each worker starts in
# milliseconds instead of importing ZODB and the storage clients again;
# the last one freezes what the others built (see its docstring).
_PRELOAD = [
    "zodbshootout.concurrency.processes",
    *storages.preload_modules(),
    "zodbshootout.concurrency.forkserver_heap",
]


def _worker_main(task: Task, barrier: Barrier, connection: Any, progress: Any = None) -> None:
    """Entry point of a worker process: run the task, send back its plain results.

    *connection*: this worker's end of a socket pair, for its reply and as
    its lifeline (the runner never sends on it).  *progress*: the stage's
    :class:`ProgressPipe`, or None when nobody listens.
    """
    lifeline.hold(connection)
    # Ctrl-C goes to the whole process group; the runner decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    install_log_redaction(find_secrets(task.source.text), said=storages.server_lost)
    try:
        context = WorkerContext(progress=None if progress is None else progress.put)
        execute_and_reply(task, barrier, context, connection.send)
    finally:
        connection.close()


class ProgressPipe:
    """The workers' progress messages to the runner, sent at once: no thread in the worker.

    multiprocessing's Queue sends from a feeder thread that it starts in
    each worker, and a thread in a worker costs its timed work (see
    concurrency.lifeline).  Here the worker sends itself, under a lock the
    workers share (a message larger than a pipe's atomic write would
    otherwise interleave with another's); the runner's ProgressFollower
    reads the other end.  A message that can't get the lock within
    :attr:`WAIT_SECONDS` (a worker died holding it) is dropped: progress
    only informs.
    """

    WAIT_SECONDS = 5.0

    def __init__(self, context: Any) -> None:
        self._reader, self._writer = context.Pipe(duplex=False)
        self._lock = context.Lock()

    def put(self, message: Any) -> None:
        if self._lock.acquire(timeout=self.WAIT_SECONDS):
            try:
                self._writer.send(message)
            finally:
                self._lock.release()

    def get(self, timeout: float) -> Any:
        if not self._reader.poll(timeout):
            raise queue.Empty
        return self._reader.recv()

    def close(self) -> None:
        self._reader.close()
        self._writer.close()


_context: Any = None


def _process_context() -> Any:
    """The forkserver context every worker process starts from (its preloads once)."""
    global _context
    if _context is None:
        _short_socket_directory()
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(_PRELOAD)
    return _context


#: What the fork server's socket adds to multiprocessing's directory
#: (``/pymp-XXXXXXXX/listener-XXXXXXXX``), and what an AF_UNIX path may hold.
_SOCKET_SUFFIX = 32
_AF_UNIX_PATH_MAX = 107


def _short_socket_directory() -> None:
    """multiprocessing's directory (the fork server's socket) under /tmp if TMPDIR is too long.

    Under a TMPDIR longer than about 75 characters, every worker failed to
    start with ``OSError: AF_UNIX path too long``.  Only multiprocessing's
    own directory moves (created once, removed at exit); the tool's
    temporary data stays in TMPDIR.
    """
    from multiprocessing import util

    fallback = "/tmp"
    too_long = len(tempfile.gettempdir()) + _SOCKET_SUFFIX > _AF_UNIX_PATH_MAX
    if not too_long or not os.access(fallback, os.W_OK | os.X_OK):
        return
    chosen = tempfile.tempdir
    tempfile.tempdir = fallback
    try:
        util.get_temp_dir()  # created now, kept for the process's life
    finally:
        tempfile.tempdir = chosen


def return_freed_memory() -> None:
    """Hand the pages malloc keeps after freeing back to the system.

    What a process freed (a database's merged intervals once saved), glibc's
    malloc keeps; a soak's coordinator grew by steps of that.  Untimed
    (between barriers); a no-op without glibc's malloc_trim.
    """
    gc.collect()
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def run_stage_in_processes(
    tasks: Sequence[Task], timeout_seconds: float, on_progress: OnProgress | None = None
) -> StageOutcome:
    """Run one process per task; wait at most *timeout_seconds* for all of them.

    *on_progress* gets the workers' progress messages, in a thread of this
    process, as they arrive.
    """
    context = _process_context()
    follower = None if on_progress is None else ProgressFollower(ProgressPipe(context), on_progress)
    barrier = context.Barrier(len(tasks))
    running: list[tuple[Task, Any, Connection]] = []
    outcome = StageOutcome()
    errors: list[str] = []
    secondary: list[str] = []
    # Starting the workers counts against the timeout: hundreds of them on
    # a busy machine can take longer than the stage itself.
    deadline = time.monotonic() + timeout_seconds
    try:
        channel = None if follower is None else follower.channel
        started = _start_workers(context, tasks, barrier, channel, deadline, running)
        if not started:
            errors.append(
                f"timed out: the {len(tasks)} workers did not start within "
                f"{timeout_seconds:g} s (raise --timeout, or lower -c)"
            )
        pending = {reader: (task, process) for task, process, reader in running}
        while pending and started:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                errors.append(
                    f"timed out: a worker did not finish within {timeout_seconds:g} s "
                    "(raise --timeout for very large runs)"
                )
                break
            for ready in multiprocessing.connection.wait(list(pending), remaining):
                # wait() is typed for sockets too; what we gave it are Connections.
                reader = cast(Connection, ready)
                task, process = pending.pop(reader)
                _receive(reader, task, process, barrier, outcome, errors, secondary)
    finally:
        _stop_all([process for _task, process, _reader in running])
        for _task, _process, reader in running:
            reader.close()
        if follower is not None:
            follower.stop()
    if errors or secondary:
        outcome.error = (errors or secondary)[0]
        outcome.timings = []
    return outcome


def _start_workers(
    context: Any,
    tasks: Sequence[Task],
    barrier: Barrier,
    progress: ProgressPipe | None,
    deadline: float,
    running: list[tuple[Task, Any, Connection]],
) -> bool:
    """Start a process per task into *running*; False if *deadline* passed first.

    Each worker's end of its socket pair is also its lifeline: only this
    process holds the other end, so when it dies, even by SIGKILL, the
    worker reads EOF and exits (see concurrency.lifeline).
    """
    for task in tasks:
        if time.monotonic() > deadline:
            return False
        reader, writer = context.Pipe()
        process = context.Process(
            target=_worker_main,
            args=(task, barrier, writer, progress),
            name=f"zodbshootout-worker-{task.worker}",
            daemon=True,
        )
        with _interrupts_held():
            process.start()
            running.append((task, process, reader))
        writer.close()
    return True


#: An interrupt (the runner's SIGINT or SIGTERM) held while a worker starts.
_held: list[BaseException] = []
_holding = False


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Hold the runner's interrupt until a worker's start is over, then raise it.

    Cut short inside ``process.start()``, the fork server has forked a child
    that the runner doesn't know of, which reads its task after the runner
    removed the stage's semaphores: a FileNotFoundError traceback; or,
    cut before the request's descriptors were sent, the fork server itself
    ends with an EOFError traceback.  Held, the started worker is in
    *running*, and stopped with the others.
    """
    global _holding
    _holding = True
    try:
        yield
    finally:
        _holding = False
        if _held:
            error = _held.pop()
            _held.clear()
            raise error


def hold_interrupt(error: BaseException) -> bool:
    """For the runner's signal handler: True if *error* waits for a worker's start to end."""
    if _holding:
        _held.append(error)
    return _holding


def _receive(
    reader: Connection,
    task: Task,
    process: Any,
    barrier: Barrier,
    outcome: StageOutcome,
    errors: list[str],
    secondary: list[str],
) -> None:
    """Take one worker's reply: its decoded results, or why it stopped (a death included)."""
    try:
        message: tuple[Any, ...] = reader.recv()
    except EOFError:
        process.join(5)
        errors.append(f"worker {task.worker} died ({_exit_reason(process)})")
        barrier.abort()
        return
    if message[0] == "ok":
        outcome.timings.extend(task.decode(message[1]))
    elif message[0] == "broken":
        secondary.append(message[1])
    else:
        errors.append(message[1])
        if len(message) > 2 and _log.isEnabledFor(logging.DEBUG):
            detail = redact(message[2], find_secrets(task.source.text))
            _log.debug("worker %s failed:\n%s", task.worker, detail)


def _exit_reason(process: Any) -> str:
    code = process.exitcode
    return "still running" if code is None else exit_code_text(code)


def exit_code_text(code: int) -> str:
    """How a process with this exit code (negative: the signal) ended, in words."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _stop_all(processes: list[Any]) -> None:
    """Terminate what is still running, then kill what ignores SIGTERM."""
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(5)
        if process.is_alive():
            os.kill(process.pid, signal.SIGKILL)
            process.join()


Where = tuple[Any, str, tuple[Any, ...]]  # (source, database name, server addresses)


def _populate_main(where: Where, fill: Callable[[Any], Any], reply: Any, lifeline_end: Any) -> None:
    """The populating process: open the database, run *fill*, close it, send
    ("ok", value) or ("error", exception)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the runner decides what stops
    lifeline.hold(lifeline_end)
    source, name, addresses = where
    install_log_redaction(find_secrets(source.text), said=storages.server_lost)
    try:
        db = open_database(source, name, list(addresses), client_label="populate")
        try:
            message: tuple[str, Any] = ("ok", fill(db))
        finally:
            db.close()
    except Exception as e:
        message = ("error", e)
    try:
        reply.send(message)
    except Exception as e:  # what pickle can't carry: said in words
        reply.send(("error", RuntimeError(f"populate's {message[0]} can't be sent: {e}")))
    reply.close()


def _populate_in_child(where: Where, fill: Callable[[Any], Any]) -> Any:
    """*fill* on the database *where*, in a process from the fork server; its
    exception raised here.  A process that dies before it answers is a
    CellError; an interruption here stops it (and the lifeline, should this
    process be killed)."""
    context = _process_context()
    replies, reply = context.Pipe(duplex=False)
    lifeline_reader, lifeline_writer = context.Pipe(duplex=False)
    process = context.Process(
        target=_populate_main,
        args=(where, fill, reply, lifeline_reader),
        name="zodbshootout-populate",
    )
    try:
        # An interrupt cut into start() between the fork server's connect and the
        # sending of its descriptors ends the fork server with a traceback.
        with _interrupts_held():
            process.start()
    except BaseException:
        if process.pid is not None:  # started, then the held interrupt
            _stop_all([process])
        for end in (replies, reply, lifeline_reader, lifeline_writer):
            end.close()
        raise
    try:
        # (In the try: an interruption here too stops the process.)
        reply.close()
        lifeline_reader.close()
        status, value = replies.recv()
        process.join(5)  # it has closed the database: let it end on its own
    except EOFError:
        process.join(5)
        raise CellError(f"the populating process died ({_exit_reason(process)})") from None
    finally:
        _stop_all([process])
        replies.close()
        lifeline_writer.close()
    if status == "error":
        raise value
    return value


class ProcessSession:
    """Workers are processes; a process of the runner's populates."""

    def __init__(self, spec: SessionSpec) -> None:
        self.spec = spec

    def populate(self, fill: Callable[[Any], T]) -> T:
        """*fill*'s value, run on the database in a short-lived process of its own.

        The load's memory leaves with that process: one in the coordinator
        kept 5 to 13 MB after each database closed (RelStorage's and SQLite's
        own allocations, out of malloc_trim's reach), so a soak over several
        databases grew by that much at each.  *fill* and its value are pickled.
        """
        source, addresses = self.spec.setup or (self.spec.source, self.spec.server_addresses)
        where = (source, self.spec.database, tuple(addresses))
        return cast(T, _populate_in_child(where, fill))

    def run_stage(
        self, tasks: Sequence[Task], timeout_seconds: float, on_progress: OnProgress | None = None
    ) -> StageOutcome:
        return run_stage_in_processes(tasks, timeout_seconds, on_progress)

    def close(self) -> None:
        pass

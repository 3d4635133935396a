"""Run a stage in c worker processes that start each phase together.

The runner sends each worker a :class:`StageTask` (plain data); the worker
opens the database itself, runs the stage's steps between barriers, and sends
back a list of PhaseTiming.  A worker that fails aborts the barrier so the
others stop at once; one that dies or hangs is noticed by the runner, which
stops the rest: nothing waits forever and no worker outlives its stage.
"""

from __future__ import annotations

import cProfile
import gc
import logging
import multiprocessing
import multiprocessing.connection
import os
import pstats
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Protocol, cast

from zodbshootout import benchmarks, caches, diagnostics, faults, phases
from zodbshootout.config import ConfigSource
from zodbshootout.errors import CellError
from zodbshootout.phases import Step, WorkerScope
from zodbshootout.redact import find_secrets, install_log_redaction, redact
from zodbshootout.results import PhaseTiming
from zodbshootout.storage import open_database

_log = logging.getLogger(__name__)

# Modules the fork server imports once, so that each worker starts in
# milliseconds instead of importing ZODB, ZEO and RelStorage again.
_PRELOAD = ["zodbshootout.workers", "ZEO.ClientStorage", "relstorage.storage"]


class Barrier(Protocol):
    def wait(self, timeout: float | None = None) -> int: ...
    def abort(self) -> None: ...


@dataclass(frozen=True)
class StageTask:
    """Everything one worker needs for one stage; crosses the process boundary."""

    source: ConfigSource
    database: str
    server_addresses: tuple[tuple[str, int], ...]
    worker: int
    object_count: int
    object_size_bytes: int
    steps: tuple[Step, ...]
    barrier_timeout_seconds: float
    profile_prefix: str | None = None  # path prefix; the phase and worker are appended
    leaks: bool = False  # count gc-tracked objects around each timed phase (--leaks)
    log: diagnostics.LogSetup | None = None  # --log: configured in the worker
    blobs: bool = False  # --blobs: the measured objects are ZODB blobs


@dataclass
class StageOutcome:
    """The workers' timings, or why the stage failed."""

    timings: list[PhaseTiming] = field(default_factory=list)
    error: str | None = None


class WorkerDatabase(Protocol):
    """The database a worker uses, and how its loads are counted.

    A worker process opens its own (:class:`OwnDatabase`); thread workers get
    theirs from zodbshootout.concurrency, whose counts are split per thread.
    """

    db: Any

    def start_counting(self) -> None: ...
    def stop_counting(self) -> caches.Counters: ...
    def close(self) -> None: ...


class OwnDatabase:
    """A database this worker process alone uses: the process's counts are its own."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self._before: caches.Counters | None = None

    def start_counting(self) -> None:
        self._before = caches.counters(self.db)

    def stop_counting(self) -> caches.Counters:
        assert self._before is not None
        return caches.counters(self.db) - self._before

    def close(self) -> None:
        self.db.close()


def execute_stage(
    task: StageTask,
    barrier: Barrier,
    clock: Callable[[], float] = time.perf_counter,
    worker_db: WorkerDatabase | None = None,
) -> list[PhaseTiming]:
    """Run the stage's steps in this process (or thread); return the timed ones.

    Each step: prepare (untimed) → barrier → timed run → barrier → counters
    and checks (untimed).  The second barrier keeps one worker's untimed work
    (cache clearing, checking) out of the others' timed regions.  Without
    *worker_db* the worker opens the database itself, as a process does.
    """
    diagnostics.configure_logging(task.log, find_secrets(task.source.text))
    if worker_db is None:
        worker_db = OwnDatabase(
            open_database(
                task.source,
                task.database,
                list(task.server_addresses),
                client_label=str(task.worker),
            )
        )
    db = worker_db.db
    try:
        caches.install_request_counters(db)
        scope = WorkerScope(
            db, task.worker, task.object_count, task.object_size_bytes, blobs=task.blobs
        )
        fault = faults.fault_for(task.database)  # test-only; None in real runs
        timings = []
        for step in task.steps:
            run = phases.RUNS[step.phase]
            prepared = phases.prepare(step.phase, scope)
            profiler = cProfile.Profile() if task.profile_prefix and step.timed else None
            worker_db.start_counting()
            objects_before = diagnostics.object_counts() if task.leaks and step.timed else None
            # Collect the untimed work's garbage now, so that collecting it
            # doesn't fall into the timed region.
            gc.collect()
            barrier.wait(task.barrier_timeout_seconds)
            if fault is not None and fault.matches(task.database, step.phase, task.worker):
                faults.fire(fault)
            if profiler is not None:
                profiler.enable()
            start = clock()
            outcome = run(scope, prepared)
            end = clock()
            if profiler is not None:
                profiler.disable()
            barrier.wait(task.barrier_timeout_seconds)
            counted = worker_db.stop_counting()
            growth = None
            if objects_before is not None:
                growth = diagnostics.object_growth(objects_before, diagnostics.object_counts())
            phases.verify(step.phase, scope, outcome)
            if profiler is not None:
                _write_profile(profiler, f"{task.profile_prefix}-{step.phase}-w{task.worker}")
            if step.timed:
                timings.append(
                    PhaseTiming(
                        phase=step.phase,
                        worker=task.worker,
                        seconds=end - start,
                        objects=task.object_count,
                        loads=counted.loads,
                        storage_loads=counted.storage_loads,
                        cache_hits=counted.cache_hits,
                        conflicts=benchmarks.conflicts_of(outcome),
                        object_growth=growth,
                    )
                )
        return timings
    finally:
        worker_db.close()


def _write_profile(profiler: cProfile.Profile, prefix: str) -> None:
    """Save a .prof file (for pstats, snakeviz) and a readable .txt beside it."""
    profiler.dump_stats(prefix + ".prof")
    with open(prefix + ".txt", "w", encoding="utf-8") as out:
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("cumulative").print_stats(60)


def _worker_main(task: StageTask, barrier: Barrier, connection: Any, lifeline: Any = None) -> None:
    """Entry point of a worker process: run the stage, send back the result."""
    # Ctrl-C goes to the whole process group; the runner decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if lifeline is not None:
        threading.Thread(
            target=_watch_lifeline, args=(lifeline,), daemon=True, name="lifeline"
        ).start()
    install_log_redaction(find_secrets(task.source.text))
    try:
        connection.send(("ok", execute_stage(task, barrier)))
    except threading.BrokenBarrierError:
        connection.send(("broken", "another worker stopped"))
    except CellError as e:
        barrier.abort()
        connection.send(("error", str(e)))
    except BaseException as e:
        barrier.abort()
        detail = traceback.format_exc()
        connection.send(("error", f"{type(e).__name__}: {e}", detail))
    finally:
        connection.close()


def _watch_lifeline(lifeline: Any) -> None:
    """Exit this worker as soon as the runner is gone.

    A worker is a child of the fork server, not of the runner, and the fork
    server outlives the runner as long as any of its children lives: if the
    runner is killed (SIGKILL, OOM killer), nothing else would stop a worker
    waiting at a barrier.  The runner never writes to the lifeline, so the
    only thing recv() can return with is EOF.
    """
    try:
        lifeline.recv()
    except (EOFError, OSError):
        pass
    os._exit(1)


_context: Any = None


def _process_context() -> Any:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(_PRELOAD)
    return _context


def run_stage_in_processes(tasks: list[StageTask], timeout_seconds: float) -> StageOutcome:
    """Run one process per task; wait at most *timeout_seconds* for all of them."""
    context = _process_context()
    barrier = context.Barrier(len(tasks))
    # Only this process holds the lifeline's sending end; when it dies, even
    # by SIGKILL, every worker reads EOF and exits (see _watch_lifeline).
    lifeline_reader, lifeline = context.Pipe(duplex=False)
    running = []
    outcome = StageOutcome()
    errors: list[str] = []
    secondary: list[str] = []
    # Starting the workers counts against the timeout: hundreds of them on
    # a busy machine can take longer than the stage itself.
    deadline = time.monotonic() + timeout_seconds
    start_timed_out = False
    try:
        for task in tasks:
            if time.monotonic() > deadline:
                start_timed_out = True
                errors.append(
                    f"timed out: the {len(tasks)} workers did not start within "
                    f"{timeout_seconds:g} s (raise --timeout, or lower -c)"
                )
                break
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker_main,
                args=(task, barrier, writer, lifeline_reader),
                name=f"zodbshootout-worker-{task.worker}",
                daemon=True,
            )
            process.start()
            running.append((task, process, reader))
            writer.close()
        lifeline_reader.close()
        pending = {reader: (task, process) for task, process, reader in running}
        while pending and not start_timed_out:
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
                try:
                    message: tuple[Any, ...] = reader.recv()
                except EOFError:
                    process.join(5)
                    errors.append(f"worker {task.worker} died ({_exit_reason(process)})")
                    barrier.abort()
                    continue
                if message[0] == "ok":
                    outcome.timings.extend(message[1])
                elif message[0] == "broken":
                    secondary.append(message[1])
                else:
                    errors.append(message[1])
                    if len(message) > 2 and _log.isEnabledFor(logging.DEBUG):
                        detail = redact(message[2], find_secrets(task.source.text))
                        _log.debug("worker %s failed:\n%s", task.worker, detail)
    finally:
        _stop_all([process for _task, process, _reader in running])
        for _task, _process, reader in running:
            reader.close()
        lifeline_reader.close()
        lifeline.close()
    if errors or secondary:
        outcome.error = (errors or secondary)[0]
        outcome.timings = []
    return outcome


def _exit_reason(process: Any) -> str:
    code = process.exitcode
    if code is None:
        return "still running"
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

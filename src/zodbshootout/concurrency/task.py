"""The task protocol: what every unit of worker work offers the concurrency layer.

A classic stage (worker.StageTask), a mix worker (mix.worker.MixTask) and a
raw floor's stage (rawkv.stage.RawStageTask) are all tasks.  Processes,
threads, greenlets and other hosts run any of them the same way: they call
``task.execute(barrier, context)`` in the worker and hand what it returned —
plain data, builtin values only — to ``task.decode`` in the runner's process.
No session looks at a task's class: a new kind of work is a new task, and
every mode runs it.

A task crosses to another host as plain data too (:func:`encode_task`,
:func:`decode_task`): its class travels as its module and name, as pickle
names a class in the processes mode, and only the package's own classes are
accepted on the way back.  A task on a database (:class:`DatabaseTask`)
starts with what its worker opens (:class:`DatabaseAt`) and has its
``to_plain`` already.
"""

from __future__ import annotations

import dataclasses
import importlib
import queue
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from zodbshootout.errors import CellError

if TYPE_CHECKING:  # types only: the protocol module stays light
    from zodbshootout.config.loader import ConfigSource
    from zodbshootout.phases.caches import Counters

#: What a task may send the runner while it runs (e.g. a mix worker's closed intervals).
OnProgress = Callable[[Any], None]


class Barrier(Protocol):
    def wait(self, timeout: float | None = None) -> int: ...
    def abort(self) -> None: ...


class WorkerDatabase(Protocol):
    """The database a worker uses, and how its loads are counted.

    A worker process opens its own (worker.OwnDatabase); thread workers get
    theirs from concurrency.threads, whose counts are split per thread.
    """

    db: Any

    def start_counting(self) -> None: ...
    def stop_counting(self) -> Counters: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class WorkerContext:
    """What the concurrency layer hands a task besides the barrier."""

    #: Threads: the database this worker uses (closed by the task when it is done);
    #: None: the task opens its own, as a process does.
    database: WorkerDatabase | None = None
    #: Where the task's progress messages go (plain data); None: nobody listens.
    progress: OnProgress | None = None


class Task(Protocol):
    """One worker's work in one stage; picklable, and plain data through to_plain."""

    @property
    def worker(self) -> int:
        """The worker's number, from 0."""
        ...

    @property
    def source(self) -> ConfigSource:
        """The configuration it opens (its secrets are kept out of the worker's log)."""
        ...

    def execute(self, barrier: Barrier, context: WorkerContext) -> list[Any]:
        """Run the work between the barrier's waits, in the worker; its results as plain data."""
        ...

    def decode(self, results: list[Any]) -> list[Any]:
        """What :meth:`execute` returned, as the records the runner keeps."""
        ...

    def timed_waits(self) -> list[tuple[int, str]]:
        """The barrier waits (counted from 0) that start a timed phase, with its name.

        The --hosts coordinator measures their release skew (see concurrency.hosts).
        """
        ...

    def to_plain(self) -> dict[str, Any]:
        """The task's fields as builtin values."""
        ...

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> Task:
        """The task :meth:`to_plain` made *data* of."""
        ...


@dataclass(frozen=True)
class DatabaseAt:
    """The database a worker opens: one of a configuration's, at its servers' addresses."""

    source: ConfigSource
    database: str
    server_addresses: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class DatabaseTask(DatabaseAt):
    """A task on a database whose fields are plain data, for a worker on another host.

    A subclass adds its fields (after these three) and a ``from_plain`` that
    decodes its own on top of :meth:`decoded`.
    """

    def to_plain(self) -> dict[str, Any]:
        """The task as builtin values."""
        data: dict[str, Any] = builtins(dataclasses.asdict(self))
        return data

    @staticmethod
    def decoded(data: dict[str, Any]) -> dict[str, Any]:
        """:meth:`to_plain`'s *data* with the database's fields decoded, the others as they are."""
        # Lazy: the configuration loader imports ZConfig; the protocol module stays light.
        from zodbshootout.config.loader import ConfigSource

        return {
            **data,
            "source": ConfigSource(**data["source"]),
            "server_addresses": tuple((host, port) for host, port in data["server_addresses"]),
        }


@dataclass
class StageOutcome:
    """The workers' decoded results (PhaseTiming for a stage), or why the stage failed."""

    timings: list[Any] = field(default_factory=list)
    error: str | None = None
    #: --hosts: where each worker ran and each timed phase's barrier release
    #: skew, as plain data for the result's metadata (see concurrency.hosts).
    host_facts: dict[str, Any] = field(default_factory=dict)


#: Only the package's own classes may be named in a task (see decode_task).
_OWN_PACKAGE = "zodbshootout."


def encode_task(task: Task) -> dict[str, Any]:
    """*task* with its class's name, for :func:`decode_task` on the host."""
    cls = type(task)
    return {"class": f"{cls.__module__}:{cls.__qualname__}", "fields": builtins(task.to_plain())}


def decode_task(data: dict[str, Any]) -> Task:
    """The task :func:`encode_task` encoded, its class imported by name."""
    module, _, name = data["class"].partition(":")
    if not module.startswith(_OWN_PACKAGE):
        raise ValueError(f"{data['class']!r} is not a task class of zodbshootout")
    cls = getattr(importlib.import_module(module), name)
    task: Task = cls.from_plain(data["fields"])
    return task


def builtins(value: Any) -> Any:
    """Tuples become lists, all the way down (execnet carries both; JSON only lists)."""
    if isinstance(value, dict):
        return {key: builtins(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [builtins(item) for item in value]
    return value


class ProgressFollower:
    """Hands the messages a stage's workers put on *channel* to *on_progress*, in a thread.

    The workers only put; whatever the listener does (merging, printing)
    runs here, outside their loops.  *channel* has ``get(timeout=...)``: a
    queue.Queue for threads, a processes.ProgressPipe for processes.
    """

    def __init__(self, channel: Any, on_progress: OnProgress) -> None:
        self.channel = channel
        self._on_progress = on_progress
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True, name="progress")
        self._thread.start()

    def _follow(self) -> None:
        while True:
            try:
                message = self.channel.get(timeout=0.2)
            except queue.Empty:
                if self._stop.is_set():
                    return  # only once drained: the last interval's messages come last
                continue
            except (EOFError, OSError, ValueError):
                return
            self._on_progress(message)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        close = getattr(self.channel, "close", None)
        if close is not None:
            close()


def execute_and_reply(
    task: Task,
    barrier: Barrier,
    context: WorkerContext,
    send: Callable[[tuple[Any, ...]], None],
    more: Callable[[], tuple[Any, ...]] = tuple,
) -> None:
    """Run *task* in its worker and *send* the runner how it went, as every mode says it.

    ``("ok", results, *more())``, ``("broken", why)`` when another worker
    stopped, or ``("error", why[, traceback])``; an error aborts the barrier
    so that the others stop at once.
    """
    try:
        results = task.execute(barrier, context)
        send(("ok", results, *more()))
    except threading.BrokenBarrierError:
        send(("broken", "another worker stopped"))
    except CellError as e:
        barrier.abort()
        send(("error", str(e)))
    except BaseException as e:
        barrier.abort()
        send(("error", f"{type(e).__name__}: {e}", traceback.format_exc()))

"""The concurrency modes' names and what every session offers the runner."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from zodbshootout.concurrency.task import DatabaseAt, OnProgress, StageOutcome, Task
from zodbshootout.concurrency.worker import StageTask
from zodbshootout.config.hosts import HostSpec
from zodbshootout.config.loader import ConfigSource
from zodbshootout.database.cache_sizing import CacheWorkload
from zodbshootout.options.run import (
    GEVENT,
    MODES,
    PROCESSES,
    SHARED,
    SHARINGS,
    THREADS,
    UNIQUE,
    RunOptions,
)
from zodbshootout.phases.classic import Step

__all__ = ["GEVENT", "MODES", "PROCESSES", "SHARED", "SHARINGS", "THREADS", "UNIQUE"]
__all__ += ["Session", "SessionSpec", "stage_tasks"]


@dataclass(frozen=True)
class SessionSpec(DatabaseAt):
    """What a session needs; plain data, sent to the gevent child as is.

    Its first fields (:class:`DatabaseAt`) are the database its workers open.
    """

    concurrency: int
    mode: str = PROCESSES
    sharing: str = SHARED  # threads and gevent only
    #: What the DBs a thread session opens must cache (worker processes size
    #: their own from their task); None: the configuration's sizes.
    cache_workload: CacheWorkload | None = None
    measure_size: bool = False  # worker 0 reads the storage's size (see storagesize)
    counters: bool = False  # --counters: count loads sent and statements (storages.count_requests)
    hosts: tuple[HostSpec, ...] = ()  # --hosts: the workers run there (see concurrency.hosts)
    #: Threads and gevent: all workers use one DB (the mode's record decides, from sharing).
    shares_one_db: bool = False
    #: Where the runner's own untimed work (populate) reaches the database, when not
    #: as the workers do: with --rtt the original configuration and servers' addresses,
    #: since the workers' proxy may listen on another host (--hosts).
    setup: tuple[ConfigSource, tuple[tuple[str, int], ...]] | None = None


class Session(Protocol):
    """One repetition's workers: populate the database, then run its stages.

    *populate* runs untimed work on the database and returns its value: in a
    process of its own (processes and hosts), the runner's (threads) or the
    gevent child: the classic run fills the containers, a mix loads its
    dataset and reads the objects' versions back.  Its *fill* and value are
    pickled in the first and last case: a module-level function or partial.
    *run_stage* runs any task (concurrency.task), one worker each;
    *on_progress* gets what the workers send while they run (gevent's child
    sends nothing).
    """

    def populate(self, fill: Callable[[Any], Any]) -> Any: ...
    def run_stage(
        self, tasks: Sequence[Task], timeout_seconds: float, on_progress: OnProgress | None = None
    ) -> StageOutcome: ...
    def close(self) -> None: ...


def stage_tasks(
    spec: SessionSpec,
    options: RunOptions,
    count: int,
    repetition: int,
    steps: list[Step],
    loops: tuple[tuple[str, int], ...] = (),
) -> list[StageTask]:
    """The tasks of one stage of one repetition, one per worker of *spec*.

    *loops*: (phase, loops) of the phases that repeat inside a sample.
    """
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in spec.database)
    cell = f"{safe}-n{count}-c{spec.concurrency}-r{repetition}"
    profile_prefix = trace_prefix = None
    if repetition > 0:  # the warm-up is neither profiled nor traced
        profile_prefix = f"{options.profile_dir}/{cell}" if options.profile_dir else None
        trace_prefix = f"{options.cache_trace_dir}/{cell}" if options.cache_trace_dir else None
    return [
        StageTask(
            source=spec.source,
            database=spec.database,
            server_addresses=spec.server_addresses,
            worker=worker,
            object_count=count,
            object_size_bytes=options.object_size_bytes,
            steps=tuple(steps),
            barrier_timeout_seconds=options.timeout_seconds,
            profile_prefix=profile_prefix,
            leaks=options.leaks,
            counters=options.counters,
            # --work counts in the warm-up only: the timed repetitions count nothing.
            work=options.work and repetition == 0,
            log=options.log,
            blobs=options.blobs,
            # Tests' faults hit a measured repetition, not the warm-up.
            fault=options.fault if repetition > 0 else None,
            loops=loops,
            index_entries=options.index_entries,
            cache_trace_prefix=trace_prefix,
            measure_size=worker == 0 and spec.measure_size,
        )
        for worker in range(spec.concurrency)
    ]

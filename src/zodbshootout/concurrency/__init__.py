"""How the c workers run: processes (default), threads, or gevent greenlets.

The runner opens a *session* per repetition (:func:`open_session`), lets it
populate the database, then runs the write stage and the read stage in it.

processes
    Each stage in c fresh worker processes (concurrency.processes); the
    runner process populates.  A storage that only one process can open
    (FileStorage, MappingStorage) can't be measured with c > 1.
threads, ``--threads shared`` (the default for threads)
    One DB in this process, opened before populate and closed after the read
    stage, used by all c worker threads, as most threaded applications do.
    Each worker gets a connection from the DB's pool and, within a stage,
    the same connection back when it opens again (so update and steamin find
    their own pickle cache, as a worker process would).  **warm** reads
    through the DB that the writer threads used: whatever its pooled
    connections' pickle caches and its storage client cache still hold —
    with c = 1 that is everything, so warm equals steamin.
threads, ``--threads unique``
    One DB per worker thread, opened before each stage and closed after it,
    so the read stage starts with new DB objects: **warm** then measures, as
    with processes, only what outlives a DB (persistent client caches,
    shared caches).  A storage that one process can open only once gets
    opened once per repetition, with a DB per thread on top of it whose
    invalidations reach the other DBs.
gevent (``--gevent``, implies threads)
    The same thread session, in a child process that gevent monkey-patches
    before anything else is imported; the worker threads are greenlets.
    RelStorage must use a driver that cooperates with gevent.

In every mode each worker's counts are its own (see thread_counting for how
threads' counts are split, and what a shared DB's cache hits mean).

processes on other hosts (``--hosts``)
    Each stage in c fresh interpreters spread over the listed client hosts,
    started through execnet (concurrency.hosts); a ready/go barrier across
    all hosts; the runner process populates.  ``zodbshootout mix --hosts``
    runs its workers through the same session.

Every mode runs any task (concurrency.task): a classic stage, a mix worker,
a floor's stage; the task says how it runs and how its plain results read.

Modules: task (the task protocol), session (mode names, SessionSpec, the
Session protocol), worker (the classic stage's worker loop), processes,
threads, gevent, thread_counting, hosts (the launcher and coordinator for
other hosts), host_worker (what runs there), host_environment.
"""

from __future__ import annotations

from typing import Any

from zodbshootout.concurrency.modes import Mode, mode_of, refuse_options, session_spec
from zodbshootout.concurrency.session import Session, SessionSpec, stage_tasks
from zodbshootout.concurrency.task import StageOutcome, Task, WorkerContext
from zodbshootout.concurrency.threads import ThreadSession
from zodbshootout.concurrency.worker import StageTask
from zodbshootout.options.run import GEVENT, MODES, PROCESSES, SHARED, SHARINGS, THREADS, UNIQUE

__all__ = [
    "GEVENT",
    "MODES",
    "PROCESSES",
    "SHARED",
    "SHARINGS",
    "THREADS",
    "UNIQUE",
    "Mode",
    "Session",
    "SessionSpec",
    "StageOutcome",
    "StageTask",
    "Task",
    "ThreadSession",
    "WorkerContext",
    "describe_mode",
    "mode_of",
    "mode_problem",
    "open_session",
    "refuse_options",
    "session_spec",
    "stage_tasks",
    "warm_note",
]


def describe_mode(mode: str, sharing: str) -> str:
    """The mode as RunResult.metadata["concurrency_mode"] records it."""
    return mode_of(mode).describe(sharing)


def warm_note(mode: str, sharing: str) -> str | None:
    """What the table's warm row means when the workers were not processes (else None)."""
    return mode_of(mode).warm_note(sharing)


def open_session(spec: SessionSpec) -> Session:
    """The session for *spec*'s mode; close it after the repetition."""
    return mode_of(spec.mode).open_session(spec)


def mode_problem(mode: str, sharing: str, concurrency: int, database_factory: Any) -> str | None:
    """Why this mode can't measure this database at this concurrency, or None."""
    return mode_of(mode).problem(sharing, concurrency, database_factory)

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

Modules: session (mode names, SessionSpec, the Session protocol), worker (the
worker loop every mode runs), processes, threads, gevent, thread_counting.
"""

from __future__ import annotations

from typing import Any

from zodbshootout import storages
from zodbshootout.concurrency.gevent import GeventSession
from zodbshootout.concurrency.processes import ProcessSession
from zodbshootout.concurrency.session import (
    GEVENT,
    MODES,
    PROCESSES,
    SHARED,
    SHARINGS,
    THREADS,
    UNIQUE,
    Session,
    SessionSpec,
    session_spec,
    stage_tasks,
)
from zodbshootout.concurrency.threads import ThreadSession
from zodbshootout.concurrency.worker import StageOutcome, StageTask

__all__ = [
    "GEVENT",
    "MODES",
    "PROCESSES",
    "SHARED",
    "SHARINGS",
    "THREADS",
    "UNIQUE",
    "Session",
    "SessionSpec",
    "StageOutcome",
    "StageTask",
    "describe_mode",
    "mode_problem",
    "open_session",
    "session_spec",
    "stage_tasks",
    "warm_note",
]


def describe_mode(mode: str, sharing: str) -> str:
    """The mode as RunResult.metadata["concurrency_mode"] records it."""
    return PROCESSES if mode == PROCESSES else f"{mode}:{sharing}"


def warm_note(mode: str, sharing: str) -> str:
    """What the table's warm row means when the workers were not processes."""
    workers = "greenlets (--gevent)" if mode == GEVENT else "threads"
    if sharing == SHARED:
        return (
            f"workers ran as {workers} sharing one DB: warm read through the DB the "
            "writers used (its pooled pickle caches and its storage cache)"
        )
    return (
        f"workers ran as {workers} with a DB each, opened anew for the read stage: "
        "warm found only caches that outlive a DB"
    )


def open_session(spec: SessionSpec) -> Session:
    """The session for *spec*'s mode; close it after the repetition."""
    if spec.mode == THREADS:
        return ThreadSession(spec)
    if spec.mode == GEVENT:
        return GeventSession(spec)
    return ProcessSession(spec)


def mode_problem(mode: str, sharing: str, concurrency: int, database_factory: Any) -> str | None:
    """Why this mode can't measure this database at this concurrency, or None."""
    if mode == PROCESSES:
        return storages.process_mode_reason(database_factory, concurrency)
    if (
        mode == GEVENT
        and sharing == UNIQUE
        and concurrency > 1
        and storages.one_client_per_gevent_process(database_factory)
    ):
        return (
            "--gevent with --threads unique needs a ZEO client per greenlet, but ZEO "
            "clients each run an asyncio loop and only one can run in a gevent process; "
            "use --gevent with --threads shared"
        )
    return None

"""``--cache-trace DIR``: record the client caches' own access traces.

Both ZEO and RelStorage can write a trace of every cache access (load hit,
load miss, store, invalidation) in ZEO's trace format, which ZEO's
``cache_simul`` and ``cache_stats`` scripts read (see
:mod:`zodbshootout.cachesim.replay`).  Left to themselves, they trace only
persistent caches:

- ZEO's ``ClientCache`` opens ``<cache file>.trace`` when the environment
  variable ``ZEO_CACHE_TRACE`` is set *and* the cache has a file (a ``client``
  name); a cache in a temporary file is never traced.
- RelStorage opens ``relstorage-trace-<prefix>.<pid>.trace`` in its
  ``cache-local-dir`` when ``ZEO_CACHE_TRACE`` is set, and traces nothing
  without a ``cache-local-dir``.

The tool wants a trace for every cache and in a directory of the user's
choice, so each storage kind switches on its library's own tracing itself
when the storage is opened (``StorageKind.trace_client_cache``), before the
DB derives its connections' storages from it.  One trace file per worker
process and stage, named after the database, count, concurrency,
repetition, stage and worker.

Tracing writes one record per cache access inside the timed region, so a
traced run's rates are not comparable with an untraced run's.

DIR must be new or empty: the traces of one run are never mixed with (or
appended to) another's, so ``cachesim DIR`` replays exactly this run.
"""

from __future__ import annotations

import os
from typing import Any

from zodbshootout import storages
from zodbshootout.errors import UsageError
from zodbshootout.probes.base import Probe
from zodbshootout.probes.base import Step as StepView
from zodbshootout.storages import tracefile
from zodbshootout.storages.base import TRACE_SUFFIX

#: Told under the table of a traced run.
TIMING_NOTE = (
    "--cache-trace: every cache access wrote a trace record inside the timed "
    "region; compare these rates only with other traced runs"
)


def prepare_directory(path: str) -> None:
    """Create the --cache-trace directory, or refuse one that holds anything (one line)."""
    try:
        os.makedirs(path, exist_ok=True)
        entries = os.listdir(path)
    except OSError as e:
        raise UsageError(f"--cache-trace {path}: {e.strerror or e}") from None
    if entries:
        raise UsageError(
            f"--cache-trace {path}: the directory is not empty ({len(entries)} entries); "
            "give a new or empty directory, so that its traces are this run's alone"
        )


def mark_phase(phase: str | None, timed: bool = True) -> None:
    """Mark a phase's start (its name) or end (None) in this process's traces, if any."""
    tracefile.mark_phase(phase if timed else None)


def trace_path(prefix: str, stage: str, worker: int | str) -> str:
    """The trace file of one worker's stage: PREFIX-STAGE-wWORKER.trace."""
    return f"{prefix}-{stage}-w{worker}{TRACE_SUFFIX}"


def trace_on_open(database_factory: Any, path: str) -> None:
    """Make the database's storage trace its client cache to *path* once it is opened.

    The storage factory's ``open`` is wrapped (in this process, for this
    factory only), so the trace starts before ZODB's DB opens its first
    connection.  Storages without a client cache are left alone.
    """
    storage_factory = database_factory.config.storage
    original_open = storage_factory.open

    def open_traced() -> Any:
        storage = original_open()
        storages.kind_of(storage).trace_client_cache(storage, path)
        return storage

    storage_factory.open = open_traced


class TraceMarks(Probe):
    """``--cache-trace``: mark where each timed phase starts and ends in the traces.

    Entered last, so that the other probes' reads (a storage's size) fall
    outside the marks; a process without traces writes nothing.
    """

    def before(self, step: StepView) -> None:
        mark_phase(step.phase, step.timed)

    def after(self, step: StepView) -> dict[str, Any]:
        mark_phase(None)
        return {}

"""The concurrency modes as records: each one's name, words, refusals and sessions.

A mode is chosen once (:func:`mode_of`, from ``RunOptions.mode``) and asked
what it needs to know; nothing else compares mode names.  How a session of
the mode opens, what the table's warm row means in it, and which databases
it can't measure are the record's, as storage kinds and phases are records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from zodbshootout import storages
from zodbshootout.concurrency.session import (
    GEVENT,
    PROCESSES,
    SHARED,
    THREADS,
    UNIQUE,
    Session,
    SessionSpec,
)
from zodbshootout.config.loader import ConfigSource
from zodbshootout.database.cache_sizing import CacheWorkload
from zodbshootout.errors import UsageError
from zodbshootout.options.run import RunOptions

__all__ = ["MODES", "Mode", "mode_of", "refuse_options", "session_spec"]


def _open_processes(spec: SessionSpec) -> Session:
    if spec.hosts:
        from zodbshootout.concurrency.hosts import HostSession

        return HostSession(spec)
    from zodbshootout.concurrency.processes import ProcessSession

    return ProcessSession(spec)


def _open_threads(spec: SessionSpec) -> Session:
    from zodbshootout.concurrency.threads import ThreadSession

    return ThreadSession(spec)


def _open_gevent(spec: SessionSpec) -> Session:
    from zodbshootout.concurrency.gevent import GeventSession

    return GeventSession(spec)


def _processes_problem(sharing: str, concurrency: int, factory: Any) -> str | None:
    return storages.process_mode_reason(factory, concurrency)


def _no_problem(sharing: str, concurrency: int, factory: Any) -> str | None:
    return None


def _gevent_problem(sharing: str, concurrency: int, factory: Any) -> str | None:
    if sharing == UNIQUE and concurrency > 1 and storages.one_client_per_gevent_process(factory):
        return (
            "--gevent with --threads unique needs a ZEO client per greenlet, but ZEO "
            "clients each run an asyncio loop and only one can run in a gevent process; "
            "use --gevent with --threads shared"
        )
    return None


@dataclass(frozen=True)
class Mode:
    """One way of running the c workers of a stage."""

    name: str
    #: What the workers are, in notes: "threads", "greenlets (--gevent)"; None: processes.
    workers: str | None
    #: The workers run in the runner's own process (its progress display must refresh less).
    in_runner_process: bool
    #: The workers run in a process gevent monkey-patched (drivers must cooperate).
    monkey_patched: bool
    #: Why this mode can't measure a database at a concurrency: (sharing, c, factory) -> reason.
    problem: Callable[[str, int, Any], str | None]
    #: Opens one repetition's session.
    open_session: Callable[[SessionSpec], Session]
    #: Options this mode can't honour: (RunOptions field, why), refused when the field is set.
    refused_options: tuple[tuple[str, str], ...] = ()

    @property
    def worker_processes(self) -> bool:
        """Whether each worker is a process of its own (what --hosts and <rawkv> need)."""
        return self.workers is None

    def option_problems(self, options: RunOptions) -> list[str]:
        """What of *options* this mode can't honour, one sentence each (a usage error)."""
        return [why for field, why in self.refused_options if getattr(options, field)]

    def refusal(self, field: str) -> str | None:
        """Why this mode can't honour the option of RunOptions *field* (any run's), or None."""
        return dict(self.refused_options).get(field)

    def describe(self, sharing: str) -> str:
        """The mode as ``RunResult.metadata["concurrency_mode"]`` records it."""
        return self.name if self.workers is None else f"{self.name}:{sharing}"

    def shares_one_db(self, sharing: str) -> bool:
        """Whether all workers use one DB (so its client cache serves all of them)."""
        return self.workers is not None and sharing == SHARED

    def warm_note(self, sharing: str) -> str | None:
        """What the table's warm row means in this mode; None for processes."""
        if self.workers is None:
            return None
        if sharing == SHARED:
            return (
                f"workers ran as {self.workers} sharing one DB: warm read through the DB the "
                "writers used (its pooled pickle caches and its storage cache)"
            )
        return (
            f"workers ran as {self.workers} with a DB each, opened anew for the read stage: "
            "warm found only caches that outlive a DB"
        )


#: What a mode whose workers share this process refuses: they are no processes.
_NEEDS_PROCESSES = (
    ("cache_trace_dir", "--cache-trace traces worker processes; run without --threads/--gevent"),
    ("hosts", "--hosts starts worker processes; run it without --threads/--gevent"),
    (
        "work",
        "--work counts in worker processes of its own, which the timed repetitions don't "
        "share; run it without --threads/--gevent",
    ),
)

#: The modes by name (``RunOptions.mode``).
MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(PROCESSES, None, False, False, _processes_problem, _open_processes),
        Mode(THREADS, "threads", True, False, _no_problem, _open_threads, _NEEDS_PROCESSES),
        Mode(
            GEVENT,
            "greenlets (--gevent)",
            False,
            True,
            _gevent_problem,
            _open_gevent,
            _NEEDS_PROCESSES,
        ),
    )
}


def mode_of(name: str) -> Mode:
    """The record of mode *name* (RunOptions checked that it is one)."""
    return MODES[name]


def refuse_options(options: RunOptions) -> None:
    """A UsageError when *options*' mode can't honour one of them (e.g. --threads --hosts)."""
    problems = mode_of(options.mode).option_problems(options)
    if problems:
        raise UsageError(problems[0])


def session_spec(
    source: ConfigSource,
    database: str,
    addresses: tuple[tuple[str, int], ...],
    options: RunOptions,
    count: int,
    workers: int,
) -> SessionSpec:
    """How one count and concurrency level of *database* runs; its caches sized for it.

    With one DB shared by thread workers, its client cache serves all of them.
    """
    shared = mode_of(options.mode).shares_one_db(options.sharing)
    workload = CacheWorkload(count, options.object_size_bytes, workers if shared else 1)
    return SessionSpec(
        source,
        database,
        addresses,
        workers,
        options.mode,
        options.sharing,
        workload,
        counters=options.counters,
        hosts=options.hosts,
        shares_one_db=shared,
    )

"""The options of a run: counts, concurrency, repetitions, phases, shapes, limits."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from zodbshootout.config.hosts import HostSpec
from zodbshootout.faults import Fault
from zodbshootout.results.stats import AGGREGATES
from zodbshootout.workload import limits
from zodbshootout.workload.limits import (
    MAX_CONCURRENCY,
    MAX_INDEX_ENTRIES,
    MAX_MIN_OBJECTS,
    MAX_OBJECT_COUNT,
    MAX_OBJECT_SIZE_BYTES,
    MAX_REPETITIONS,
    MAX_TIMEOUT_SECONDS,
    Footprint,
    footprint_problems,
    physical_memory_bytes,
)
from zodbshootout.workload.objects import MIN_OBJECT_SIZE_BYTES

#: Default --precision, in percent of the mean.
DEFAULT_PRECISION_PERCENT = 5.0
#: Default --max-time: seconds of measuring per object count and concurrency
#: level, enough for etc/local.conf to finish within a minute.
DEFAULT_MAX_SECONDS = 35.0
#: Repetitions before the rule is consulted: two rates give a t quantile of
#: 12.7, which makes almost any cell look imprecise.
DEFAULT_MIN_REPETITIONS = 3


@dataclass(frozen=True)
class StoppingRule:
    """How many repetitions a count and concurrency level gets.

    ``relative_half_width`` None means the fixed rule: ``min_repetitions``
    repetitions, no more.
    """

    min_repetitions: int = DEFAULT_MIN_REPETITIONS
    relative_half_width: float | None = DEFAULT_PRECISION_PERCENT / 100
    max_seconds: float = DEFAULT_MAX_SECONDS

    @property
    def adaptive(self) -> bool:
        return self.relative_half_width is not None

    def as_metadata(self, warmup: bool) -> dict[str, Any]:
        """The rule as the result file records it (the table reads ``precision``)."""
        return {
            "min_repetitions": self.min_repetitions,
            "precision": self.relative_half_width,
            "max_time_seconds": self.max_seconds if self.adaptive else None,
            "warmup": warmup,
        }


DEFAULT_OBJECT_SIZE_BYTES = 128

#: How the workers run (see zodbshootout.concurrency): --threads, --gevent.
PROCESSES = "processes"
THREADS = "threads"
GEVENT = "gevent"
MODES = (PROCESSES, THREADS, GEVENT)
#: Threads and greenlets: one DB for all workers (shared) or one each (unique).
SHARED = "shared"
UNIQUE = "unique"
SHARINGS = (SHARED, UNIQUE)


@dataclass(frozen=True)
class LogSetup:
    """A ``--log`` value, as plain data that workers can receive.

    Exactly one of *level* (a logging level name) and *config_text* (the
    text of a ZConfig logging configuration) is set.
    """

    level: str | None = None
    config_text: str | None = None
    config_url: str | None = None  # where config_text came from, for error messages


def _registry() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Every phase's name in run order, and the classic phases' (the default).

    Lazy import: the phase records import ZODB, and this module is read by
    the subcommands on saved runs, which must not load it.
    """
    from zodbshootout.phases.classic import PHASES, REGISTRY

    # The registry as it is now: a phase registered later (a test's) is known too.
    return tuple(REGISTRY), PHASES


@dataclass(frozen=True)
class RunOptions:
    """Counts, concurrency levels, repetitions and phases of a run."""

    object_counts: tuple[int, ...] = (1000,)
    concurrencies: tuple[int, ...] = (2,)
    #: Repetitions: exactly these many, or with *precision* at least these many.
    repetitions: int = 3
    #: --precision as a fraction (0.05 = 5 %): add repetitions until every
    #: cell's 95 % confidence half-width is within it, or *max_time_seconds*
    #: of a count and concurrency level are spent; None: exactly *repetitions*.
    precision: float | None = None
    max_time_seconds: float = DEFAULT_MAX_SECONDS
    #: One untimed repetition per database first: calibrates the loops,
    #: warms files and caches; recorded as a warm-up, never in the statistics.
    warmup: bool = True
    phases: tuple[str, ...] = field(default_factory=lambda: _registry()[1])
    object_size_bytes: int = DEFAULT_OBJECT_SIZE_BYTES
    aggregate: str = "mean"
    profile_dir: str | None = None
    timeout_seconds: float = 600.0
    # Database state and diagnostics (see dbstate and diagnostics).
    min_objects: int = 0  # objects kept besides the measured ones (--min-objects)
    pack: bool = False  # pack each database once before measuring it (--pack)
    zap: tuple[str, ...] = ()  # databases the user confirmed to wipe first (--zap)
    leaks: bool = False  # count object growth per phase in the workers (--leaks)
    #: --counters: count storage loads sent and SQL statements in the timed region
    counters: bool = False
    #: --work: count each phase's work per transaction in the untimed warm-up
    work: bool = False
    log: LogSetup | None = None  # logging in the parent and the workers (--log)
    # Concurrency mode and object shapes (see concurrency and blobs).
    mode: str = PROCESSES  # processes | threads | gevent (--threads, --gevent)
    #: threads and gevent: one DB for all workers (shared) or one each (unique), --threads.
    sharing: str = SHARED
    hosts: tuple[HostSpec, ...] = ()  # --hosts: worker processes on these client hosts
    btrees: str | None = None  # --btrees: "IO" or "OO" containers instead of PersistentMapping
    blobs: bool = False  # --blobs: the measured objects are ZODB blobs
    # Insight beyond the rates (see cachetrace, indexes, insight).
    cache_trace_dir: str | None = None  # --cache-trace: client cache traces land here
    index_entries: int = 0  # --index-entries: BTree index entries kept per object
    fault: Fault | None = None  # tests only: a worker that fails on purpose (see faults)

    def __post_init__(self) -> None:
        problems = list(self.problems())
        if problems:
            raise ValueError(problems[0])

    def problems(self) -> list[str]:
        """What is wrong with these options, one sentence each."""
        found = []
        if not self.object_counts or any(n < 1 for n in self.object_counts):
            found.append("object counts must be whole numbers of at least 1")
        if not self.concurrencies or any(c < 1 for c in self.concurrencies):
            found.append("concurrency levels must be whole numbers of at least 1")
        found.extend(_repetition_problems(self))
        if self.object_size_bytes < MIN_OBJECT_SIZE_BYTES:
            found.append(f"the object size must be at least {MIN_OBJECT_SIZE_BYTES} bytes")
        found.extend(_limit_problems(self))
        all_phases = _registry()[0]
        unknown = [p for p in self.phases if p not in all_phases]
        if unknown:
            found.append(
                f"unknown phase {unknown[0]!r}; choose from {', '.join(all_phases)} or all"
            )
        if self.min_objects < 0:
            found.append("--min-objects must be a whole number of at least 0")
        if not self.phases:
            found.append("select at least one phase")
        found.extend(_workload_problems(self))
        found.extend(_insight_problems(self))
        if self.aggregate not in AGGREGATES:
            found.append(f"unknown aggregate {self.aggregate!r}; choose from mean, min")
        if not self.timeout_seconds > 0:
            found.append("the timeout must be a positive number of seconds")
        return found

    @property
    def stopping_rule(self) -> StoppingRule:
        """When a count and concurrency level has had enough repetitions."""
        return StoppingRule(self.repetitions, self.precision, self.max_time_seconds)

    @property
    def ordered_phases(self) -> list[str]:
        """The selected phases in the order a run performs them."""
        return [p for p in _registry()[0] if p in self.phases]


def _insight_problems(options: RunOptions) -> list[str]:
    """What is wrong with --index-entries and --work.

    What a concurrency mode refuses (--cache-trace, --hosts outside process
    mode) is its record's to say: see concurrency.modes.Mode.option_problems.
    """
    found = []
    if options.index_entries < 0:
        found.append("--index-entries must be a whole number of at least 0")
    if options.work and not options.warmup:
        found.append("--work counts in the warm-up repetition, which this run skips")
    return found


def _limit_problems(options: RunOptions) -> list[str]:
    """Values too large to finish or fit (see zodbshootout.workload.limits for why)."""
    found = []
    if max(options.object_counts, default=0) > MAX_OBJECT_COUNT:
        found.append(
            f"-n takes at most {MAX_OBJECT_COUNT:,} objects per worker (each worker holds "
            "its transaction in memory); measure larger databases with --min-objects"
        )
    if max(options.concurrencies, default=0) > MAX_CONCURRENCY:
        found.append(
            f"-c takes at most {MAX_CONCURRENCY} workers (each is a process or thread "
            "with its own connection; more would not start, fit in memory, or be accepted "
            "by a database server)"
        )
    if options.repetitions > MAX_REPETITIONS:
        found.append(f"-r takes at most {MAX_REPETITIONS} repetitions")
    if options.object_size_bytes > MAX_OBJECT_SIZE_BYTES:
        found.append(f"-s takes at most {MAX_OBJECT_SIZE_BYTES:,} bytes per object")
    if options.timeout_seconds > 0 and not options.timeout_seconds <= MAX_TIMEOUT_SECONDS:
        found.append(f"--timeout takes at most {MAX_TIMEOUT_SECONDS:,.0f} seconds (a week)")
    if options.index_entries > MAX_INDEX_ENTRIES:
        found.append(f"--index-entries takes at most {MAX_INDEX_ENTRIES:,} entries per object")
    if options.min_objects > MAX_MIN_OBJECTS:
        found.append(f"--min-objects takes at most {MAX_MIN_OBJECTS:,} objects")
    if not found:
        found.extend(footprint_problems(footprint(options), physical_memory_bytes()))
    return found


def footprint(options: RunOptions) -> Footprint:
    """What the run's workers hold at its largest level, for the shared limits.

    Workers on other hosts (--hosts) use those hosts' memory: only the share
    of the workers that runs on this one counts against this machine.
    """
    local = 1.0
    if options.hosts:
        shares = sum(host.share for host in options.hosts)
        local = sum(host.share for host in options.hosts if host.is_local) / max(1, shares)
    return Footprint(
        workers=max(options.concurrencies, default=0),
        transaction_objects=max(options.object_counts, default=0),
        object_size_bytes=options.object_size_bytes,
        index_entries=options.index_entries,
        stored_objects=options.min_objects,
        local_fraction=local,
    )


def estimated_memory_bytes(options: RunOptions) -> int:
    """About what the run's workers hold at once, in bytes, at its largest level."""
    return limits.estimated_memory_bytes(dataclasses.replace(footprint(options), local_fraction=1))


def _memory_problems(options: RunOptions, machine_bytes: int | None) -> list[str]:
    """A run whose workers (on this machine) together need more memory than it has."""
    return limits._memory_problems(footprint(options), machine_bytes)


def _repetition_problems(options: RunOptions) -> list[str]:
    """What is wrong with -r, --precision and --max-time."""
    found = []
    if options.repetitions < 1:
        found.append("repetitions must be at least 1")
    if options.precision is not None and not 0 < options.precision < 1:
        found.append("--precision must be a percentage above 0 and below 100")
    if not 0 < options.max_time_seconds <= MAX_TIMEOUT_SECONDS:
        found.append(
            f"--max-time must be a positive number of seconds, at most "
            f"{MAX_TIMEOUT_SECONDS:,.0f} (a week)"
        )
    return found


def _workload_problems(options: RunOptions) -> list[str]:
    """What is wrong with the concurrency mode and the object shapes."""
    from zodbshootout.workload.containers import CONTAINER_KINDS

    found = []
    if options.mode not in MODES:
        found.append(f"unknown concurrency mode {options.mode!r}; choose from {', '.join(MODES)}")
    if options.sharing not in SHARINGS:
        found.append(f"--threads takes {' or '.join(SHARINGS)}, not {options.sharing!r}")
    if options.btrees is not None and options.btrees not in CONTAINER_KINDS:
        found.append(f"--btrees takes {' or '.join(CONTAINER_KINDS)}, not {options.btrees!r}")
    return found

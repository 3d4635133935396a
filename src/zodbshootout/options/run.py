"""The options of a run: counts, concurrency, repetitions, phases, shapes, limits."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from zodbshootout.config.hosts import HostSpec
from zodbshootout.faults import Fault
from zodbshootout.inputs import format_size
from zodbshootout.results.stats import AGGREGATES
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

# Limits: values beyond them cannot finish or fit on any machine this tool
# targets, so they are refused before anything starts (exit code 2).

#: -n: a worker builds its whole transaction of N objects in memory, and the
#: storage buffers it again to commit it.
MAX_OBJECT_COUNT = 1_000_000
#: -c: every worker is a process (or thread) with its own connection; beyond
#: this, start-up alone outlasts any phase, memory runs out (some 50 MB per
#: process), and servers refuse the connections (PostgreSQL allows 100 by default).
MAX_CONCURRENCY = 256
#: -r: more repetitions add nothing to the statistics, only hours.
MAX_REPETITIONS = 1000
#: -s: one object's payload; larger records belong in blobs of their own.
MAX_OBJECT_SIZE_BYTES = 100_000_000
#: -n times -s: the payload one worker holds in memory for its transaction.
MAX_TRANSACTION_BYTES = 1_000_000_000
#: --min-objects: filler objects written once into the database.
MAX_MIN_OBJECTS = 100_000_000
#: --min-objects times -s: the filler's size in the database.
MAX_FILLER_BYTES = 100_000_000_000
#: --timeout: a week; the system's timers overflow not far beyond.
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600.0
#: --index-entries: BTree index entries per object; real catalogs keep tens.
MAX_INDEX_ENTRIES = 1000
#: -n times --index-entries: the index entries one worker writes in its add
#: transaction (each a string key in an OOBTree, held in memory until commit).
MAX_INDEX_KEYS = 10_000_000

# What a run holds in memory, to refuse one the machine cannot (see
# estimated_memory_bytes).  Deliberately low estimates: only a run that
# cannot fit is refused, not one that might.
#: A worker process with ZODB and a storage client imported, before any object.
WORKER_BASE_BYTES = 40 << 20
#: One object of the transaction besides its payload (the persistent object,
#: its container entry, its pickle buffered for the commit).
OBJECT_OVERHEAD_BYTES = 200
#: One index entry (a short string key and its OOBTree slot).
INDEX_ENTRY_BYTES = 100


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
    """What is wrong with --index-entries.

    What a concurrency mode refuses (--cache-trace, --hosts outside process
    mode) is its record's to say: see concurrency.modes.Mode.option_problems.
    """
    found = []
    if options.index_entries < 0:
        found.append("--index-entries must be a whole number of at least 0")
    return found


def _limit_problems(options: RunOptions) -> list[str]:
    """Values too large to finish or fit (see the MAX_ constants for why)."""
    found = []
    largest_count = max(options.object_counts, default=0)
    if largest_count > MAX_OBJECT_COUNT:
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
    elif largest_count * options.object_size_bytes > MAX_TRANSACTION_BYTES:
        found.append(
            f"the objects per worker times the object size (-n × -s) may be at most "
            f"{MAX_TRANSACTION_BYTES:,} bytes: a worker holds its transaction in memory"
        )
    if options.timeout_seconds > 0 and not options.timeout_seconds <= MAX_TIMEOUT_SECONDS:
        found.append(f"--timeout takes at most {MAX_TIMEOUT_SECONDS:,.0f} seconds (a week)")
    found.extend(_index_problems(options))
    if not found:
        found.extend(_memory_problems(options, physical_memory_bytes()))
    if options.min_objects > MAX_MIN_OBJECTS:
        found.append(f"--min-objects takes at most {MAX_MIN_OBJECTS:,} objects")
    elif options.min_objects * options.object_size_bytes > MAX_FILLER_BYTES:
        found.append(
            f"--min-objects times the object size (-s) may be at most {MAX_FILLER_BYTES:,} "
            "bytes of filler"
        )
    return found


def _index_problems(options: RunOptions) -> list[str]:
    if options.index_entries > MAX_INDEX_ENTRIES:
        return [f"--index-entries takes at most {MAX_INDEX_ENTRIES:,} entries per object"]
    if max(options.object_counts, default=0) * options.index_entries > MAX_INDEX_KEYS:
        return [
            f"the objects per worker times --index-entries (-n × K) may be at most "
            f"{MAX_INDEX_KEYS:,}: a worker holds its index entries in memory until it commits"
        ]
    return []


def estimated_memory_bytes(options: RunOptions) -> int:
    """About what the run's workers hold at once, in bytes, at its largest level.

    Each of the c workers holds its transaction of N objects: the payload
    twice (the objects and the pickles the storage buffers to commit them),
    an overhead per object, its index entries, and the process itself.
    """
    count = max(options.object_counts, default=0)
    workers = max(options.concurrencies, default=0)
    per_object = (
        2 * options.object_size_bytes
        + OBJECT_OVERHEAD_BYTES
        + options.index_entries * INDEX_ENTRY_BYTES
    )
    return workers * (WORKER_BASE_BYTES + count * per_object)


def physical_memory_bytes() -> int | None:
    """This machine's memory in bytes, or None where the system doesn't say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _memory_problems(options: RunOptions, machine_bytes: int | None) -> list[str]:
    """A run whose workers together need more memory than this machine has.

    Workers on other hosts (--hosts) use those hosts' memory: only the share
    of the workers that runs on this one counts.
    """
    if not machine_bytes:
        return []
    needed = estimated_memory_bytes(options)
    if options.hosts:
        local = sum(host.share for host in options.hosts if host.is_local)
        needed = needed * local // max(1, sum(host.share for host in options.hosts))
    if needed <= machine_bytes:
        return []
    return [
        f"the run would need at least {format_size(needed)} of memory (-c workers, each "
        f"holding -n objects of -s bytes twice), more than this machine's "
        f"{format_size(machine_bytes)}: lower -c, -n or -s"
    ]


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

"""What a run measures and how: the options, validated, as plain data."""

from __future__ import annotations

from dataclasses import dataclass

from zodbshootout.diagnostics import LogSetup
from zodbshootout.faults import Fault
from zodbshootout.objects import MIN_OBJECT_SIZE_BYTES
from zodbshootout.phases import ALL_PHASES, PHASES
from zodbshootout.precision import DEFAULT_MAX_SECONDS, StoppingRule
from zodbshootout.stats import AGGREGATES

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
    phases: tuple[str, ...] = PHASES
    object_size_bytes: int = DEFAULT_OBJECT_SIZE_BYTES
    aggregate: str = "mean"
    profile_dir: str | None = None
    timeout_seconds: float = 600.0
    # Database state and diagnostics (see dbstate and diagnostics).
    min_objects: int = 0  # objects kept besides the measured ones (--min-objects)
    pack: bool = False  # pack each database once before measuring it (--pack)
    zap: tuple[str, ...] = ()  # databases the user confirmed to wipe first (--zap)
    leaks: bool = False  # count object growth per phase in the workers (--leaks)
    log: LogSetup | None = None  # logging in the parent and the workers (--log)
    # Concurrency mode and object shapes (see concurrency and blobs).
    mode: str = PROCESSES  # processes | threads | gevent (--threads, --gevent)
    threads: str = SHARED  # threads and gevent: one DB for all (shared) or each (unique)
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
        unknown = [p for p in self.phases if p not in ALL_PHASES]
        if unknown:
            found.append(
                f"unknown phase {unknown[0]!r}; choose from {', '.join(ALL_PHASES)} or all"
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
        return [p for p in ALL_PHASES if p in self.phases]


def _insight_problems(options: RunOptions) -> list[str]:
    """What is wrong with --index-entries and --cache-trace."""
    found = []
    if options.index_entries < 0:
        found.append("--index-entries must be a whole number of at least 0")
    if options.cache_trace_dir is not None and options.mode != PROCESSES:
        found.append("--cache-trace traces worker processes; run without --threads/--gevent")
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
    if options.min_objects > MAX_MIN_OBJECTS:
        found.append(f"--min-objects takes at most {MAX_MIN_OBJECTS:,} objects")
    elif options.min_objects * options.object_size_bytes > MAX_FILLER_BYTES:
        found.append(
            f"--min-objects times the object size (-s) may be at most {MAX_FILLER_BYTES:,} "
            "bytes of filler"
        )
    return found


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
    from zodbshootout.workload import CONTAINER_KINDS

    found = []
    if options.mode not in MODES:
        found.append(f"unknown concurrency mode {options.mode!r}; choose from {', '.join(MODES)}")
    if options.threads not in SHARINGS:
        found.append(f"--threads takes {' or '.join(SHARINGS)}, not {options.threads!r}")
    if options.btrees is not None and options.btrees not in CONTAINER_KINDS:
        found.append(f"--btrees takes {' or '.join(CONTAINER_KINDS)}, not {options.btrees!r}")
    return found

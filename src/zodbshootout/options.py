"""What a run measures and how: the options, validated, as plain data."""

from __future__ import annotations

from dataclasses import dataclass

from zodbshootout.diagnostics import LogSetup
from zodbshootout.faults import Fault
from zodbshootout.objects import MIN_OBJECT_SIZE_BYTES
from zodbshootout.phases import ALL_PHASES, PHASES
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


@dataclass(frozen=True)
class RunOptions:
    """Counts, concurrency levels, repetitions and phases of a run."""

    object_counts: tuple[int, ...] = (1000,)
    concurrencies: tuple[int, ...] = (2,)
    repetitions: int = 3
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
        if self.repetitions < 1:
            found.append("repetitions must be at least 1")
        if self.object_size_bytes < MIN_OBJECT_SIZE_BYTES:
            found.append(f"the object size must be at least {MIN_OBJECT_SIZE_BYTES} bytes")
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

"""The limits every mode shares: counts, sizes, workers, and what they add up to.

Values beyond them cannot finish or fit on any machine this tool targets, so
they are refused before anything starts (exit code 2).  The classic run
(:class:`zodbshootout.options.run.RunOptions`) and ``mix`` describe what
their workers hold as a :class:`Footprint`; :func:`footprint_problems` is
the one judge of the totals (workers × objects × size), so a new mode gets
the same limits by describing its footprint.  The command line's types
(:mod:`zodbshootout.cli.numbers`) enforce the per-option bounds below.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from zodbshootout.inputs import format_size

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
#: What one worker holds at once (-n × -s in a classic run): its transaction,
#: and in a mix what its connection caches too.
MAX_TRANSACTION_BYTES = 1_000_000_000
#: --min-objects, and mix's dataset (-n): objects written once into the database.
MAX_MIN_OBJECTS = 100_000_000
#: --min-objects (or mix's -n) times -s: what is written once, in bytes.
MAX_FILLER_BYTES = 100_000_000_000
#: --timeout, --max-time, mix's -d and --warmup: a week; the system's timers
#: overflow not far beyond.
MAX_TIMEOUT_SECONDS = 7 * 24 * 3600.0
#: --timeout: below a second a stage's workers cannot even start; the
#: messages that name the timeout count in whole seconds.
MIN_TIMEOUT_SECONDS = 1.0
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
class Footprint:
    """What a run's workers hold and what it stores, at its largest level.

    *transaction_objects* are built (or read) and buffered for the commit:
    their payload counts twice; *cached_objects* are what a worker's
    connection cache keeps besides (once).  *held* names them in messages
    (``-n``), *stored_by* the option of the objects written once.
    """

    workers: int
    transaction_objects: int
    object_size_bytes: int
    cached_objects: int = 0
    index_entries: int = 0
    stored_objects: int = 0
    extra_bytes_per_worker: int = 0  # e.g. a mix worker's key chooser table
    #: The share of the workers that runs on this machine (the rest on --hosts).
    local_fraction: float = 1.0
    held: str = "-n"
    stored_by: str = "--min-objects"

    @property
    def held_bytes(self) -> int:
        """One worker's payload in memory: its transaction's objects and its cache's."""
        return (self.transaction_objects + self.cached_objects) * self.object_size_bytes


def footprint_problems(footprint: Footprint, machine_bytes: int | None) -> list[str]:
    """What makes *footprint* too large to finish or fit, one sentence each."""
    found = []
    if footprint.held_bytes > MAX_TRANSACTION_BYTES:
        found.append(
            f"the objects per worker times the object size ({footprint.held} × -s) may be at "
            f"most {MAX_TRANSACTION_BYTES:,} bytes: a worker holds its transaction in memory"
        )
    if footprint.transaction_objects * footprint.index_entries > MAX_INDEX_KEYS:
        found.append(
            f"the objects per worker times --index-entries ({footprint.held} × K) may be at "
            f"most {MAX_INDEX_KEYS:,}: a worker holds its index entries in memory until it "
            "commits"
        )
    if not found:
        found.extend(_memory_problems(footprint, machine_bytes))
    if footprint.stored_objects * footprint.object_size_bytes > MAX_FILLER_BYTES:
        found.append(
            f"{footprint.stored_by} times the object size (-s) may be at most "
            f"{MAX_FILLER_BYTES:,} bytes written once"
        )
    return found


def estimated_memory_bytes(footprint: Footprint) -> int:
    """About what the run's workers hold at once, in bytes (all of them, every host).

    Each worker holds its transaction's objects (the payload twice: the
    objects and the pickles the storage buffers to commit them), an overhead
    per object, its index entries, what its cache keeps, and the process.
    """
    size = footprint.object_size_bytes
    per_object = 2 * size + OBJECT_OVERHEAD_BYTES + footprint.index_entries * INDEX_ENTRY_BYTES
    per_worker = (
        WORKER_BASE_BYTES
        + footprint.extra_bytes_per_worker
        + footprint.transaction_objects * per_object
        + footprint.cached_objects * (size + OBJECT_OVERHEAD_BYTES)
    )
    return footprint.workers * per_worker


def physical_memory_bytes() -> int | None:
    """This machine's memory in bytes, or None where the system doesn't say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _memory_problems(footprint: Footprint, machine_bytes: int | None) -> list[str]:
    """Workers that together need more memory than this machine has (its share of them)."""
    if not machine_bytes:
        return []
    needed = int(estimated_memory_bytes(footprint) * footprint.local_fraction)
    if needed <= machine_bytes:
        return []
    return [
        f"the run would need at least {format_size(needed)} of memory (-c workers, each "
        f"holding {footprint.held} objects of -s bytes twice), more than this machine's "
        f"{format_size(machine_bytes)}: lower -c, -n or -s"
    ]


#: What one commit of objects written once (filler, a mix's dataset) may hold.
MAX_BATCH_BYTES = 100_000_000


def objects_per_commit(object_size_bytes: int, most: int) -> int:
    """How many objects of *object_size_bytes* to write per commit: at most *most*.

    Large objects take fewer per commit, so that writing the filler or a
    dataset never holds more than MAX_BATCH_BYTES of payload at once.
    """
    return max(1, min(most, MAX_BATCH_BYTES // max(1, object_size_bytes)))

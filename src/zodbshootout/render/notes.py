"""Notes under the table that are computed from the raw timings.

Conflict counts (``conflicts``, ``readcurrent_conflicts``) and object growth
(``--leaks``) are recorded per worker in PhaseTiming; these functions sum
them up, so that a saved result shows the same notes as the run did.
"""

from __future__ import annotations

import statistics
from collections import Counter

from zodbshootout.render.labels import COUNTS_CONFLICTS, phase_label
from zodbshootout.render.rtt import rtt_notes
from zodbshootout.results.record import RunResult
from zodbshootout.results.work import has_work, n_plus_one

#: PhaseTiming.object_growth's key for the net change of all types.
GROWTH_TOTAL = "*total*"


def derived_notes(result: RunResult) -> list[str]:
    """Every note computed from the timings: samples, reloads, conflicts, leaks."""
    return (
        sample_notes(result)
        + reload_notes(result)
        + update_reload_notes(result)
        + shared_cache_notes(result)
        + conflict_notes(result)
        + leak_notes(result)
        + work_notes(result)
        + rtt_notes(result)
    )


def _span(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}–{high}"


def sample_notes(result: RunResult) -> list[str]:
    """How many samples each cell has, and how many loops a looped phase's sample holds.

    One note per object count and concurrency level that has measurements.
    """
    repetitions: dict[tuple[int, int], dict[tuple[str, str], set[int]]] = {}
    loops: dict[tuple[int, int], dict[str, list[int]]] = {}
    warmed: set[tuple[int, int]] = set()
    for m in result.measurements:
        level = (m.object_count, m.concurrency)
        if m.warmup:
            warmed.add(level)
            continue
        cell = (m.database, m.phase)
        repetitions.setdefault(level, {}).setdefault(cell, set()).add(m.repetition)
        if m.timing.loops > 1:
            loops.setdefault(level, {}).setdefault(m.phase, []).append(m.timing.loops)
    several = len(repetitions) > 1
    notes = []
    for level, cells in repetitions.items():
        text = "samples per cell" + (f" (n={level[0]}, c={level[1]})" if several else "")
        text += f": {_span([len(reps) for reps in cells.values()])}"
        if level in warmed:
            text += ", after an untimed warm-up"
        looped = loops.get(level, {})
        if looped:
            text += "; loops per sample: " + ", ".join(
                f"{phase} {_span(counts)}" for phase, counts in looped.items()
            )
        notes.append(text)
    return notes


def reload_notes(result: RunResult) -> list[str]:
    """Databases whose steamin loaded objects: then it did not measure the pickle cache."""
    loaded = sorted(
        {
            m.database
            for m in result.measurements
            if m.phase == "steamin" and not m.warmup and m.timing.loads
        }
    )
    return [
        f"{database}: steamin loaded objects from the storage: the pickle cache "
        "(cache-size in its <zodb> section) holds fewer objects than each worker reads"
        for database in loaded
    ]


#: Objects any transaction loads besides the measured ones: the root, the
#: tool's mapping and the worker's container.
ROUTE_OBJECTS = 3


def update_reload_notes(result: RunResult) -> list[str]:
    """update loaded the objects add had just written: it measured reloading them too.

    In the write stage's process add leaves its N objects in the pickle
    cache, so update should load at most the root, the tool's mapping and
    the container.  More means they were invalidated or evicted (RelStorage
    at a large N drops them at the poll after its own commit), and the
    loads, from the client cache or the storage, are in update's time.
    """
    worst: dict[tuple[str, int], tuple[int, int]] = {}
    for m in result.measurements:
        if m.phase != "update" or m.warmup or m.timing.loads <= ROUTE_OBJECTS:
            continue
        key = (m.database, m.object_count)
        if m.timing.loads > worst.get(key, (0, 0))[0]:
            worst[key] = (m.timing.loads, m.timing.cache_hits or 0)
    return [
        f"{database}: update (n={count}) loaded up to {loads:,} objects per worker "
        f"({hits:,} of them from the client cache): the objects add wrote were no longer in "
        "the pickle cache, so update's time includes loading them again"
        for (database, count), (loads, hits) in sorted(worst.items())
    ]


def shared_cache_notes(result: RunResult) -> list[str]:
    """A shared cache (memcached) that was written to but never read during the run."""
    written: dict[str, int] = {}
    read: dict[str, int] = {}
    for m in result.measurements:
        if m.warmup or m.timing.shared_cache_sets is None:
            continue
        written[m.database] = written.get(m.database, 0) + m.timing.shared_cache_sets
        gets = (m.timing.shared_cache_hits or 0) + (m.timing.shared_cache_misses or 0)
        read[m.database] = read.get(m.database, 0) + gets
    return [
        f"{database}: its shared cache (memcached) took {written[database]:,} writes but "
        "served no reads: it only cost time here (every commit and every miss also "
        "writes to it), which add, update, cold and prefetch include"
        for database in sorted(written)
        if written[database] and not read[database]
    ]


def conflict_notes(result: RunResult) -> list[str]:
    """One note per database, count, concurrency and conflict-counting phase measured.

    A count of zero is worth saying too: it tells the reader that the
    workers did not overlap (or the storage resolved every conflict).
    """
    totals: dict[tuple[str, int, int, str], list[int]] = {}
    repetitions: dict[tuple[str, int, int, str], set[int]] = {}
    for m in result.measurements:
        if m.phase in COUNTS_CONFLICTS:
            key = (m.database, m.object_count, m.concurrency, m.phase)
            totals.setdefault(key, []).append(m.timing.conflicts)
            repetitions.setdefault(key, set()).add(m.repetition)
    notes = []
    for key, counts in totals.items():
        database, count, concurrency, phase = key
        runs = len(repetitions[key])
        notes.append(
            f"{phase}: {database} (n={count}, c={concurrency}): "
            f"{_plural(sum(counts), 'conflict')} retried in {_plural(runs, 'repetition')}"
        )
    return notes


def _plural(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def leak_notes(result: RunResult) -> list[str]:
    """One note per database and phase whose workers' tracked objects grew.

    The figure is the mean growth per worker and repetition, so that it
    doesn't depend on -c or -r; the three types that grew most follow.
    """
    growth: dict[tuple[str, int, int, str], list[dict[str, int]]] = {}
    for m in result.measurements:
        if m.timing.object_growth is not None:
            key = (m.database, m.object_count, m.concurrency, m.phase)
            growth.setdefault(key, []).append(m.timing.object_growth)
    notes = []
    for (database, count, concurrency, phase), records in growth.items():
        total = statistics.fmean(r.get(GROWTH_TOTAL, 0) for r in records)
        if total <= 0:
            continue
        by_type: Counter[str] = Counter()
        for record in records:
            by_type.update({k: v for k, v in record.items() if k != GROWTH_TOTAL})
        top = ", ".join(
            f"{name} +{delta / len(records):.0f}" for name, delta in by_type.most_common(3)
        )
        notes.append(
            f"leaks: {database} {phase} (n={count}, c={concurrency}): tracked objects grew "
            f"by {total:.0f} per worker and repetition" + (f" ({top})" if top else "")
        )
    return notes


def work_notes(result: RunResult) -> list[str]:
    """Where a --work run's counts come from, and its reads that fetched object by
    object where prefetch batched (see results.work.n_plus_one)."""
    if not has_work(result):
        return []
    notes = [
        "work/transaction: counted in the untimed warm-up repetition (--work); "
        "the timed repetitions counted nothing"
    ]
    for found in n_plus_one(result):
        key = found.key
        where = f" (c={key.concurrency})" if len(result.concurrencies) > 1 else ""
        notes.append(
            f"N+1 pattern: {key.database}{where}: {phase_label(key.phase, key.object_count)} "
            f"took {found.round_trips:.0f} round trips per transaction, one per object, "
            f"where prefetching them took {found.prefetched_round_trips:.0f}: "
            "a read like this gains from Connection.prefetch"
        )
    return notes

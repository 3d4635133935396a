"""Notes under the table that are computed from the raw timings.

Conflict counts (``conflicts``, ``readcurrent_conflicts``) and object growth
(``--leaks``) are recorded per worker in PhaseTiming; these functions sum
them up, so that a saved result shows the same notes as the run did.
"""

from __future__ import annotations

import statistics
from collections import Counter

from zodbshootout.phases import counts_conflicts
from zodbshootout.results import RunResult

#: PhaseTiming.object_growth's key for the net change of all types.
GROWTH_TOTAL = "*total*"


def derived_notes(result: RunResult) -> list[str]:
    """Every note computed from the timings: conflicts first, then leaks."""
    return conflict_notes(result) + leak_notes(result)


def conflict_notes(result: RunResult) -> list[str]:
    """One note per database, count, concurrency and conflict-counting phase measured.

    A count of zero is worth saying too: it tells the reader that the
    workers did not overlap (or the storage resolved every conflict).
    """
    totals: dict[tuple[str, int, int, str], list[int]] = {}
    repetitions: dict[tuple[str, int, int, str], set[int]] = {}
    for m in result.measurements:
        if counts_conflicts(m.phase):
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

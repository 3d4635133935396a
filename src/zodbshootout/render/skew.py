"""The footnote of a ``--hosts`` cell whose workers did not start together.

The coordinator's barrier releases the workers on every host at once, but
the "go" reaches them over the network and their CPUs pick it up when they
can: the runner records, per timed phase and repetition, how far apart the
workers started (``metadata["barrier_skew"]``).  When that spread is more
than a small share of the phase's duration, the workers did not overlap as
the concurrency level says, and the cell's rate says less about it.
"""

from __future__ import annotations

import statistics

from zodbshootout.results.record import CellKey, RunResult

#: The share of a phase's mean duration beyond which a cell's skew is footnoted.
SKEW_SHARE = 0.05

SKEW_FOOTNOTE = (
    f"the workers on the hosts started this phase further apart than {SKEW_SHARE:.0%} of its "
    "duration (barrier skew, see barrier_skew in the result file): raise -n so that each "
    "phase lasts longer"
)


def worst_skew_share(result: RunResult, key: CellKey) -> float | None:
    """The largest barrier skew of the cell's measured repetitions, over their duration."""
    records = result.metadata.get("barrier_skew") or []
    skews = {
        record["repetition"]: record["skew_seconds"]
        for record in records
        if (record["database"], record["concurrency"], record["object_count"], record["phase"])
        == (key.database, key.concurrency, key.object_count, key.phase)
    }
    shares = []
    for repetition, timings in result.timings_for(key).items():
        seconds = statistics.fmean(timing.seconds for timing in timings)
        if repetition in skews and seconds > 0:
            shares.append(skews[repetition] / seconds)
    return max(shares) if shares else None


def skew_footnote(result: RunResult, key: CellKey) -> str | None:
    """:data:`SKEW_FOOTNOTE` when the cell's skew exceeds :data:`SKEW_SHARE`, else None."""
    share = worst_skew_share(result, key)
    return SKEW_FOOTNOTE if share is not None and share > SKEW_SHARE else None

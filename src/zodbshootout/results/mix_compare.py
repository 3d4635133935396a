"""Compare two mix runs: throughput and latency percentiles per database and operation.

Each database's whole-run throughput and p99 (every operation together) are
tested for significance over the run's intervals (Welch's t-test of the
per-interval values, Holm-corrected across everything tested): the
intervals are the repeated samples of a mix run, as repetitions are of a
classic one.  Intervals of one run are not fully independent (a slow second
tends to follow a slow second), so read p as a guide, and prefer runs long
enough for many intervals.  Per-operation percentiles are shown with their
ratio, untested (a run holds each operation's histogram, not its intervals).
With two workers or more in both runs, a database's fairness (Jain's index
of its workers' committed transactions, see results.mix_fairness) is one
more row, untested, under the operation ``workers``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from zodbshootout.results.compare import holm_adjust
from zodbshootout.results.mix import MixRecord, MixRun
from zodbshootout.results.mix_fairness import fairness
from zodbshootout.results.mix_stats import (
    ALL,
    PERCENTILES,
    OperationSummary,
    interval_series,
    summarize,
)
from zodbshootout.results.record import RunResult
from zodbshootout.results.stats import welch_t_test

#: Significance level of a flagged change (after the Holm correction).
ALPHA = 0.05

THROUGHPUT = "tx/s"
MAX = "max"
#: Jain's index of the workers' committed transactions (1: all alike).
FAIRNESS = "jain"
#: The operation a fairness row is under.
WORKERS = "workers"
#: The metrics that get better upwards.
HIGHER_IS_BETTER = frozenset({THROUGHPUT, FAIRNESS})


def metric_name(percentile: float) -> str:
    return f"p{percentile:g}"


#: The metrics of each row, in table order; only THROUGHPUT gets better upwards.
METRICS = (THROUGHPUT, *(metric_name(p) for p in PERCENTILES), MAX)


@dataclass(frozen=True)
class MetricComparison:
    """One metric of one operation of one database in both runs."""

    database: str
    operation: str
    metric: str
    base: float
    changed: float
    p_adjusted: float | None = None  # None: not tested
    #: The test's own p, before Holm's correction (what a test of this row alone says).
    p_value: float | None = None

    @property
    def ratio(self) -> float:
        """changed ÷ base (nan when the base is zero or missing)."""
        if not self.base or math.isnan(self.base):
            return math.nan
        return self.changed / self.base

    @property
    def worse_by(self) -> float:
        """How much worse the change is, as a fraction (0.2: 20 % worse; negative: better)."""
        ratio = self.ratio
        if math.isnan(ratio) or ratio == 0:
            return math.nan
        return 1 / ratio - 1 if self.metric in HIGHER_IS_BETTER else ratio - 1

    @property
    def significant(self) -> bool:
        return self.p_adjusted is not None and self.p_adjusted < ALPHA


def _values(row: OperationSummary) -> dict[str, float]:
    values = {THROUGHPUT: row.per_second}
    values.update((metric_name(p), row.percentiles_ms[p]) for p in PERCENTILES)
    values[MAX] = row.max_ms
    return values


def compare_mix(base: MixRun, changed: MixRun) -> list[MetricComparison]:
    """Every metric of every operation of the databases both runs measured."""
    rows: list[MetricComparison] = []
    tests: list[tuple[int, float]] = []  # (index in rows, raw p)
    for ours in base.records:
        other = changed.record(ours.database)
        if other is not None:
            _compare_database(ours, other, rows, tests)
    adjusted = holm_adjust([p for _index, p in tests])
    for (index, _p), p_adjusted in zip(tests, adjusted, strict=True):  # _p: the raw p
        row = rows[index]
        rows[index] = MetricComparison(
            row.database, row.operation, row.metric, row.base, row.changed, p_adjusted, _p
        )
    return rows


#: The metrics tested over intervals, and the interval series each is tested on.
_TESTED = {THROUGHPUT: "per_second", "p99": "p99_ms"}


def _compare_database(
    ours: MixRecord,
    other: MixRecord,
    rows: list[MetricComparison],
    tests: list[tuple[int, float]],
) -> None:
    """Append one database's rows; note the tests of its whole-run rows in *tests*."""
    changed_rows = {row.operation: row for row in summarize(other)}
    single = len(ours.operations) == 1
    for row in summarize(ours):
        if row.operation not in changed_rows:
            continue
        after = _values(changed_rows[row.operation])
        whole_run = row.operation == ALL or single
        for metric, value in _values(row).items():
            series = _TESTED.get(metric) if whole_run else None
            if series is not None:
                test = welch_t_test(
                    tuple(interval_series(ours, series)), tuple(interval_series(other, series))
                )
                if test is not None:
                    tests.append((len(rows), test.p_value))
            rows.append(
                MetricComparison(ours.database, row.operation, metric, value, after[metric])
            )
    before_fair, after_fair = fairness(ours), fairness(other)
    if before_fair is not None and after_fair is not None:
        base = math.nan if before_fair.jain is None else before_fair.jain
        changed = math.nan if after_fair.jain is None else after_fair.jain
        rows.append(MetricComparison(ours.database, WORKERS, FAIRNESS, base, changed))


@dataclass(frozen=True)
class MixComparison:
    """A changed mix run against the base: every row of :func:`compare_mix`, and the runs' names."""

    rows: list[MetricComparison]
    base_name: str
    changed_name: str
    #: ``--only-significant``: the tables list only the rows significant after the correction.
    only_significant: bool = False
    #: The runs measured on a busy machine: (name, ``load 10.6 on 2 cores``).
    busy: tuple[tuple[str, str], ...] = ()
    #: How the two runs differ in kind (see :func:`kind_differences`).
    kind: tuple[tuple[str, str, str], ...] = ()

    @property
    def shown(self) -> list[MetricComparison]:
        """The rows a table lists: all, or the significant ones (--only-significant)."""
        if not self.only_significant:
            return self.rows
        return [row for row in self.rows if row.significant]


def mix_kind(result: RunResult) -> dict[str, str]:
    """What a mix run measured, in words, by aspect: two runs that differ in one of
    these measure different things, and their tx/s and latencies do not compare.

    The loop (closed, or open at a --rate), the workload (its weights), the
    key choice and the dataset.  The sizes of a transaction (-k, --scan) and
    the workers are left out: a comparison varies them on purpose, to see
    what they cost.  An aspect the file does not record (a run saved before
    it was) is left out too.
    """
    options = result.metadata.get("mix") or {}
    records = MixRun.of(result).records
    kind: dict[str, str] = {}
    if "rate_per_second" in options or records:
        # Every record of a run has the run's rate; older files have only the records'.
        rate = options.get("rate_per_second", records[0].rate_per_second if records else None)
        arrival = options.get("arrival")
        kind["loop"] = (
            "closed loop"
            if rate is None
            else f"--rate {rate:g}/s" + (f" ({arrival})" if arrival else "")
        )
    workload = options.get("workload") or next((r.workload for r in records if r.workload), None)
    if workload:
        kind["workload"] = str(workload)
        if options.get("weights"):
            weights = ",".join(f"{op}={w}" for op, w in options["weights"].items())
            kind["workload"] += f" ({weights})"
    if options.get("keys"):
        hot = options.get("hot")
        hot_text = "/".join(str(share) for share in hot) if isinstance(hot, list) else ""
        hotspot = options["keys"] == "hotspot" and hot_text
        kind["keys"] = str(options["keys"]) + (f" {hot_text}" if hotspot else "")
    if options.get("objects") is not None:
        size = options.get("object_size_bytes")
        kind["dataset"] = f"{options['objects']} objects" + (f" of {size} bytes" if size else "")
    return kind


def kind_differences(base: RunResult, changed: RunResult) -> list[tuple[str, str, str]]:
    """(aspect, base's, changed's) for each aspect both runs record and differ in."""
    ours, theirs = mix_kind(base), mix_kind(changed)
    return [
        (aspect, ours[aspect], theirs[aspect])
        for aspect in ours
        if aspect in theirs and ours[aspect] != theirs[aspect]
    ]


def slower_p99(rows: list[MetricComparison], percent: float) -> list[MetricComparison]:
    """The databases whose p99 grew significantly by more than *percent* (--fail-if-slower)."""
    return [
        row
        for row in rows
        if row.metric == "p99" and row.significant and row.worse_by > percent / 100
    ]

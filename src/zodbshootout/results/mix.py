"""A mix run's results: per database, per operation and per interval, as typed records.

The workers' reports are merged here into one plain record per database
(:func:`merge_reports`), which the runner appends to ``RunResult.mix`` and a
result file holds as it is.  Everything that reads a mix run reads it
through the typed, immutable records below (:meth:`MixRun.of`), so that
their shape is written down once: a database's :class:`MixRecord` holds an
:class:`OperationTotals` per operation and an :class:`Interval` per interval.
Their statistics are pure functions in :mod:`zodbshootout.results.mix_stats`.

Records saved by earlier versions lack some keys (a check of the dataset
after the run, uncertain increments, counters): those read as their
defaults, which every reader treats as "not recorded".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from zodbshootout.results.histogram import encode, merge
from zodbshootout.results.record import Failure, RunResult


def _int(data: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{key} is not a whole number")
    return value


def _number(data: Mapping[str, Any], key: str, default: float | None = None) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} is not a number")
    return float(value)


def _optional_number(data: Mapping[str, Any], key: str) -> float | None:
    return None if data.get(key) is None else _number(data, key)


def _counts(data: Mapping[str, Any], key: str) -> dict[str, int]:
    value = data.get(key) or {}
    if not isinstance(value, dict) or not all(
        isinstance(count, int) and not isinstance(count, bool) for count in value.values()
    ):
        raise ValueError(f"{key} is not a count by class")
    return dict(value)


def _text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{key} is not text")
    return value


#: Fields that only grow: client caches, PostgreSQL's pg_stat_database, MySQL's
#: SHOW GLOBAL STATUS, the ZEO server's status, memcached's stats.
COUNTER_FIELDS = frozenset(
    {
        "client_cache_hits",
        "client_cache_misses",
        "client_cache_fills",
        "commits",
        "rollbacks",
        "blocks_hit",
        "blocks_read",
        "deadlocks",
        "temp_bytes",
        "buffer_pool_reads",
        "buffer_pool_read_requests",
        "row_lock_waits",
        "loads",
        "stores",
        "aborts",
        "conflicts",
        "conflicts_resolved",
        "get_hits",
        "get_misses",
        "cmd_set",
        "evictions",
        "cache_hits",
    }
)

#: Fields that are a level at the sample.
GAUGE_FIELDS = frozenset(
    {
        "pickle_cache_objects",
        "pickle_cache_bytes",
        "client_cache_objects",
        "client_cache_bytes",
        "client_cache_index_depth",
        "rss",
        "live_rows",
        "dead_rows",
        "connections",
        "waiting_on_locks",
        "locks",
        "threads_connected",
        "threads_running",
        "history_list_length",
        "active_txns",
        "waiting",
        "curr_items",
        "bytes",
        "curr_connections",
        "cpu_wait_ratio",
        "cpu_pressure",
        "load_1min",
    }
)


def is_counter(name: str) -> bool:
    """Whether the series *name* only grows (its rate is what moves), by its last dotted part.

    A field neither list knows is taken as a level, its values as they are.
    """
    return name.rsplit(".", 1)[-1] in COUNTER_FIELDS


@dataclass(frozen=True)
class OperationTotals:
    """One operation's committed transactions in one database, every worker together.

    Latencies are HdrHistograms of whole microseconds in their string
    encoding ("" when empty); ``service`` only in an open loop (--rate),
    where ``latency`` counts from each transaction's intended start.
    """

    count: int
    latency: str
    service: str | None = None
    #: Every transient error, by exception class; retries are attempts after the first.
    conflicts: Mapping[str, int] = field(default_factory=dict)
    retries: int = 0
    #: Transactions given up, by their last error's class.
    failures: Mapping[str, int] = field(default_factory=dict)
    lag_sum_seconds: float = 0.0
    lag_max_seconds: float = 0.0

    @classmethod
    def from_data(cls, data: Any) -> OperationTotals:
        """The record a result file holds; a ValueError names what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError("an operation is not an object")
        latency = _text(data, "latency") or ""
        return cls(
            count=_int(data, "count"),
            latency=latency,
            service=_text(data, "service"),
            conflicts=_counts(data, "conflicts"),
            retries=_int(data, "retries", 0),
            failures=_counts(data, "failures"),
            lag_sum_seconds=_number(data, "lag_sum_seconds", 0.0),
            lag_max_seconds=_number(data, "lag_max_seconds", 0.0),
        )


@dataclass(frozen=True)
class Interval:
    """One interval of the run, every worker and operation together (latencies in µs)."""

    transactions: int
    p50_us: float | None = None
    p99_us: float | None = None
    max_us: float | None = None

    @classmethod
    def from_data(cls, data: Any) -> Interval:
        if not isinstance(data, dict):
            raise ValueError("an interval is not an object")
        return cls(
            transactions=_int(data, "transactions"),
            p50_us=_optional_number(data, "p50_us"),
            p99_us=_optional_number(data, "p99_us"),
            max_us=_optional_number(data, "max_us"),
        )


@dataclass(frozen=True)
class WorkerTotals:
    """One worker's share of a database's run: its commits, changes and latencies.

    ``transactions`` are the worker's committed transactions of every
    operation (a read commits too); ``increments`` the object changes they
    made (``warmup_increments``: its warm-up's), so that every worker's add
    up to what the read-back found.  ``latency`` is the worker's latencies of
    every operation, an encoded HdrHistogram ("" when empty).
    """

    worker: int
    seconds: float
    transactions: int
    latency: str
    increments: int = 0
    warmup_increments: int = 0
    #: With --hosts: the host the worker ran on; None otherwise.
    host: str | None = None

    @classmethod
    def from_data(cls, data: Any) -> WorkerTotals:
        if not isinstance(data, dict):
            raise ValueError("a worker is not an object")
        return cls(
            worker=_int(data, "worker"),
            seconds=_number(data, "seconds"),
            transactions=_int(data, "transactions"),
            latency=_text(data, "latency") or "",
            increments=_int(data, "increments", 0),
            warmup_increments=_int(data, "warmup_increments", 0),
            host=_text(data, "host"),
        )


@dataclass(frozen=True)
class Series:
    """One series on the run's time axis: *t* in seconds from the measurement's start.

    A counter's values are cumulative (its delta between two samples is what
    happened between them); a gauge's (objects, bytes, connections) are its level.
    """

    unit: str
    t: tuple[float, ...]
    values: tuple[float, ...]

    @classmethod
    def from_data(cls, data: Any) -> Series:
        if not isinstance(data, dict):
            raise ValueError("a series is not an object")
        unit = _text(data, "unit") or ""
        times, values = data.get("t"), data.get("values")
        if not isinstance(times, list) or not isinstance(values, list):
            raise ValueError("a series' t or values is not a list")
        if len(times) != len(values):
            raise ValueError("a series has not as many times as values")
        for value in (*times, *values):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError("a series holds something other than numbers")
        return cls(unit, tuple(float(t) for t in times), tuple(values))

    def delta(self) -> float:
        """Last value minus first (a counter's growth over the series); 0 when empty."""
        return float(self.values[-1] - self.values[0]) if self.values else 0.0


@dataclass(frozen=True)
class MixRecord:
    """One database's mix run: its operations, its intervals, and what the check after found."""

    database: str
    concurrency: int
    seconds: float  # the measured duration
    operations: Mapping[str, OperationTotals]  # in the workload's table order
    intervals: tuple[Interval, ...]
    workload: str | None = None  # None in records of runs before it was recorded
    rate_per_second: float | None = None  # None: a closed loop
    interval_seconds: float | None = None
    #: Scheduled transactions that never started before the end (an open loop fell behind).
    unstarted: int = 0
    #: Object changes committed in the measured run and in the warm-up.
    increments: int = 0
    warmup_increments: int = 0
    #: Changes in commits that failed with an error other than a conflict.
    uncertain_increments: int = 0
    inserted: int = 0
    #: The storage's load counters over the run (None where a counter was not read).
    counters: Mapping[str, int | None] = field(default_factory=dict)
    #: The dataset before the run: objects present and written (untimed).
    dataset: Mapping[str, Any] | None = None
    #: The object changes the database held after the run; None before that check existed.
    changes_found: int | None = None
    #: Each worker's share, in worker order; empty in records saved before it was kept.
    workers: tuple[WorkerTotals, ...] = ()
    #: --work: the untimed counting pass (see results.work.mix_work); None without it.
    work: Mapping[str, Any] | None = None
    #: --work: why the counting pass failed, or None.
    work_error: str | None = None
    #: --work: the object changes the counting pass committed (in changes_found too).
    work_increments: int = 0
    #: Series sampled every interval, by name (``client.<worker>.<name>``,
    #: ``<server>.<name>``); empty in records of runs before they were sampled.
    series: Mapping[str, Series] = field(default_factory=dict)
    #: Why a sampler or a part of one read nothing (each said once).
    series_notes: tuple[str, ...] = ()
    #: The wall-clock time (epoch seconds) of t = 0: the first worker's measurement start.
    series_origin: float | None = None
    #: Did throughput or p99 drift over the run (see results.drift); None before it was kept.
    drift: Mapping[str, Any] | None = None
    #: --restart-clients: when the workers restarted and the verdict (see results.drift).
    restart: Mapping[str, Any] | None = None
    #: --until-steady: its rule and when the run became steady (see results.steady).
    steady: Mapping[str, Any] | None = None
    #: With --warmup 0 or --restart-clients: each start's warm-up curve (results.warmup).
    warmup: tuple[Mapping[str, Any], ...] = ()
    #: A checkpoint's record, saved while the run went on (--checkpoint): the intervals
    #: closed so far and every operation together as ``all``; the run's end replaces it.
    partial: bool = False

    @classmethod
    def from_data(cls, data: Any) -> MixRecord:
        """The record a result file holds; a ValueError names what is wrong with it."""
        if not isinstance(data, dict):
            raise ValueError("not an object")
        operations = data.get("operations")
        intervals = data.get("intervals")
        if not isinstance(operations, dict) or not isinstance(intervals, list):
            raise ValueError("operations or intervals of the wrong type")
        counters = data.get("counters") or {}
        dataset = data.get("dataset")
        if not isinstance(counters, dict) or not isinstance(dataset, dict | None):
            raise ValueError("counters or dataset of the wrong type")
        database = _text(data, "database")
        if database is None:
            raise ValueError("no database")
        found = data.get("changes_found")
        workers = data.get("workers") or []
        work = data.get("work")
        if not isinstance(workers, list) or not isinstance(work, dict | None):
            raise ValueError("workers or work of the wrong type")
        series = data.get("series") or {}
        notes = data.get("series_notes") or []
        if not isinstance(series, dict) or not isinstance(notes, list):
            raise ValueError("series or series_notes of the wrong type")
        drift, restart = data.get("drift"), data.get("restart")
        if not isinstance(drift, dict | None) or not isinstance(restart, dict | None):
            raise ValueError("drift or restart of the wrong type")
        steady, curves = data.get("steady"), data.get("warmup") or []
        if not isinstance(steady, dict | None) or not isinstance(curves, list):
            raise ValueError("steady or warmup of the wrong type")
        return cls(
            database=database,
            concurrency=_int(data, "concurrency"),
            seconds=_number(data, "seconds"),
            operations={str(op): OperationTotals.from_data(e) for op, e in operations.items()},
            intervals=tuple(Interval.from_data(interval) for interval in intervals),
            workload=_text(data, "workload"),
            rate_per_second=_optional_number(data, "rate_per_second"),
            interval_seconds=_optional_number(data, "interval_seconds"),
            unstarted=_int(data, "unstarted", 0),
            increments=_int(data, "increments", 0),
            warmup_increments=_int(data, "warmup_increments", 0),
            uncertain_increments=_int(data, "uncertain_increments", 0),
            inserted=_int(data, "inserted", 0),
            counters=counters,
            dataset=dataset,
            changes_found=None if found is None else _int(data, "changes_found"),
            workers=tuple(WorkerTotals.from_data(worker) for worker in workers),
            work=work,
            work_error=_text(data, "work_error"),
            work_increments=_int(data, "work_increments", 0),
            series={str(name): Series.from_data(entry) for name, entry in series.items()},
            series_notes=tuple(str(note) for note in notes),
            series_origin=_optional_number(data, "series_origin"),
            drift=drift,
            restart=restart,
            steady=steady,
            warmup=tuple(curve for curve in curves if isinstance(curve, dict)),
            partial=bool(data.get("partial", False)),
        )

    @property
    def open_loop(self) -> bool:
        """Run at a target rate (--rate): latencies count from the intended start."""
        return self.rate_per_second is not None

    @property
    def interval_length_seconds(self) -> float:
        """Seconds per interval (1 where a record doesn't say)."""
        return self.interval_seconds or 1.0


@dataclass(frozen=True)
class MixRun:
    """A mix run as its tables, charts and comparisons read it."""

    records: tuple[MixRecord, ...]
    #: Databases that could not be measured, and why.
    failures: tuple[Failure, ...] = ()
    interrupted: bool = False
    #: The run's options (``metadata.mix``), as far as the output names them.
    workload: str | None = None
    arrival: str | None = None
    seed: int | None = None
    #: With --hosts: per database, the host each worker ran on.
    worker_hosts: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: With --hosts: per database, how far apart the workers started measuring (seconds).
    skews: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    #: With --rtt: the ladder's record (``metadata["rtt"]``, see results.rtt).
    rtt: Mapping[str, Any] = field(default_factory=dict)
    #: --per-worker: the tables add a row per worker (how it is shown; never saved).
    per_worker: bool = False

    @classmethod
    def of(cls, result: RunResult, per_worker: bool = False) -> MixRun:
        """*result*'s mix records, typed; a ValueError for a record of the wrong shape."""
        metadata = result.metadata
        options = metadata.get("mix") or {}
        workers = metadata.get("mix_workers") or {}
        skews: dict[str, tuple[float, ...]] = {}
        for skew in metadata.get("barrier_skew") or []:
            if skew.get("phase") == "mix" and skew.get("skew_seconds") is not None:
                database = str(skew.get("database"))
                skews[database] = (*skews.get(database, ()), float(skew["skew_seconds"]))
        return cls(
            records=tuple(MixRecord.from_data(record) for record in result.mix),
            failures=tuple(result.failures),
            interrupted=bool(result.interrupted),
            workload=options.get("workload"),
            arrival=options.get("arrival"),
            seed=options.get("seed"),
            worker_hosts={
                str(name): tuple(
                    str(place.get("host")) for place in placed.values() if isinstance(place, dict)
                )
                for name, placed in workers.items()
                if isinstance(placed, dict) and placed
            },
            skews=skews,
            rtt=metadata.get("rtt") or {},
            per_worker=per_worker,
        )

    @property
    def open_loop(self) -> bool:
        """Some database ran at a target rate (--rate)."""
        return any(record.open_loop for record in self.records)

    def record(self, database: str) -> MixRecord | None:
        """The record of *database*, or None when the run did not measure it."""
        return next((r for r in self.records if r.database == database), None)

    def hosts_of(self, database: str) -> Counter[str]:
        """With --hosts: how many workers of *database* ran on each host (empty otherwise)."""
        return Counter(self.worker_hosts.get(database, ()))


# --- Merging the workers' reports ----------------------------------------------------


class _Workload(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def operations(self) -> tuple[str, ...]: ...


class MixSchedule(Protocol):
    """What :func:`merge_reports` needs of a mix plan (zodbshootout.mix.worker.MixPlan)."""

    @property
    def workload(self) -> _Workload: ...

    @property
    def rate_per_second(self) -> float | None: ...

    @property
    def interval_seconds(self) -> float: ...


def merge_reports(
    name: str, reports: list[dict[str, Any]], plan: MixSchedule, workers: int
) -> dict[str, Any]:
    """The workers' reports as one record of the database (plain data, for the result)."""
    operations: dict[str, dict[str, Any]] = {}
    for op in plan.workload.operations:
        entries = [report["operations"][op] for report in reports]
        service = [e["service"] for e in entries if e["service"] is not None]
        operations[op] = {
            "count": sum(e["count"] for e in entries),
            "latency": encode(merge([e["latency"] for e in entries])),
            "service": encode(merge(service)) if service else None,
            "conflicts": sum_counts(e["conflicts"] for e in entries),
            "retries": sum(e["retries"] for e in entries),
            "failures": sum_counts(e["failures"] for e in entries),
            "lag_sum_seconds": sum(e["lag_sum_seconds"] for e in entries),
            "lag_max_seconds": max(e["lag_max_seconds"] for e in entries),
        }
    return {
        "database": name,
        "workload": plan.workload.name,
        "concurrency": workers,
        "rate_per_second": plan.rate_per_second,
        "interval_seconds": plan.interval_seconds,
        "seconds": max(report["seconds"] for report in reports),
        "operations": operations,
        "intervals": _merge_intervals(reports),
        "unstarted": sum(report["unstarted"] for report in reports),
        "increments": sum(report["increments"] for report in reports),
        "warmup_increments": sum(report["warmup_increments"] for report in reports),
        "uncertain_increments": sum(report["uncertain_increments"] for report in reports),
        "inserted": sum(report["inserted"] for report in reports),
        "counters": sum_counters([r["counters"] for r in reports if r["counters"] is not None]),
        "workers": [_worker_totals(report) for report in sorted(reports, key=_worker_of)],
        **client_series(reports),
    }


def _worker_of(report: dict[str, Any]) -> int:
    return int(report["worker"])


def _worker_totals(report: dict[str, Any]) -> dict[str, Any]:
    """One worker's committed transactions, changes and latencies (see WorkerTotals)."""
    entries = report["operations"].values()
    return {
        "worker": report["worker"],
        "seconds": report["seconds"],
        "transactions": sum(e["count"] for e in entries),
        "latency": encode(merge([e["latency"] for e in entries])),
        "increments": report["increments"],
        "warmup_increments": report["warmup_increments"],
        "host": None,
    }


def client_series(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """The workers' series as ``client.<worker>.<name>``, their notes once, the time origin.

    Each worker's times count from its own measurement start, which the
    barrier makes the run's (within its release skew).
    """
    series: dict[str, Any] = {}
    notes: list[str] = []
    for report in sorted(reports, key=lambda report: report.get("worker", 0)):
        for name, entry in (report.get("series") or {}).items():
            series[f"client.{report.get('worker', 0)}.{name}"] = entry
        for note in report.get("series_notes") or []:
            if f"client: {note}" not in notes:
                notes.append(f"client: {note}")
    starts = [report["started_at"] for report in reports if report.get("started_at") is not None]
    spent = [report.get("series_seconds") for report in reports]
    return {
        "series": series,
        "series_notes": notes,
        "series_origin": min(starts) if starts else None,
        # What sampling cost: each sampling worker's seconds (the runner adds its thread's).
        "series_cost": {"client_seconds": [s for s in spent if s is not None]},
    }


def sum_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    """Counts by name (conflicts, failures by class) added up, sorted by name."""
    total: dict[str, int] = {}
    for count in counts:
        for key, value in count.items():
            total[key] = total.get(key, 0) + value
    return dict(sorted(total.items()))


def sum_counters(counters: list[dict[str, int | None]]) -> dict[str, int | None]:
    """Storage counters added up; one that some side could not count (None) stays None."""
    total: dict[str, int | None] = {}
    for counter in counters:
        for key, value in counter.items():
            before = total.get(key, 0)
            total[key] = None if value is None or before is None else before + value
    return total


def _merge_intervals(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Interval i of every worker added up: transactions and latency percentiles (µs).

    Only intervals every worker finished are kept.
    """
    count = min(len(report["intervals"]) for report in reports)
    merged = []
    for index in range(count):
        entries = [report["intervals"][index] for report in reports]
        union = merge([histogram for _n, histogram in entries])
        transactions = sum(n for n, _h in entries)
        merged.append(
            {
                "transactions": transactions,
                "p50_us": union.get_value_at_percentile(50.0) if transactions else None,
                "p99_us": union.get_value_at_percentile(99.0) if transactions else None,
                "max_us": union.get_max_value() if transactions else None,
            }
        )
    return merged


# --- Joining the two stages of --restart-clients -------------------------------------


def join_stages(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Each worker's reports of the two stages as one report; the restart's record.

    The second stage's new processes count from their own start: their
    intervals follow the first's, their series' times are moved onto the
    first's time axis, and a counter that restarted from zero continues from
    where the first process left it (a jump would read as a burst).  The
    restart's record says after which interval it came and how many seconds
    passed between the two measurements (processes starting, connecting).
    """
    by_worker = {report["worker"]: report for report in second}
    # Every worker's first stage as long as the shortest (one more interval
    # closed by one clock is not the run's), so interval i stays interval i.
    at = min(len(report["intervals"]) for report in first)
    joined = []
    gaps = []
    for a in first:
        b = by_worker.get(a["worker"])
        if b is None:
            joined.append(a)
            continue
        shift = 0.0
        if a.get("started_at") is not None and b.get("started_at") is not None:
            shift = b["started_at"] - a["started_at"]
            gaps.append(shift - a["seconds"])
        joined.append(_join_two({**a, "intervals": a["intervals"][:at]}, b, shift))
    restart = {"after_interval": at, "gap_seconds": round(max(gaps), 3) if gaps else None}
    return joined, restart


def _join_two(a: dict[str, Any], b: dict[str, Any], shift: float) -> dict[str, Any]:
    operations = {}
    for op, x in a["operations"].items():
        y = b["operations"][op]
        service = [e["service"] for e in (x, y) if e["service"] is not None]
        operations[op] = {
            "count": x["count"] + y["count"],
            "latency": encode(merge([x["latency"], y["latency"]])),
            "service": encode(merge(service)) if service else None,
            "conflicts": sum_counts([x["conflicts"], y["conflicts"]]),
            "retries": x["retries"] + y["retries"],
            "failures": sum_counts([x["failures"], y["failures"]]),
            "lag_sum_seconds": x["lag_sum_seconds"] + y["lag_sum_seconds"],
            "lag_max_seconds": max(x["lag_max_seconds"], y["lag_max_seconds"]),
        }
    counters = [c for c in (a["counters"], b["counters"]) if c is not None]
    series = dict(a.get("series") or {})
    for name, entry in (b.get("series") or {}).items():
        before = series.get(name)
        values = list(entry["values"])
        if before and before["values"] and values and is_counter(name):
            lift = before["values"][-1] - values[0]
            values = [value + lift for value in values]
        times = [round(t + shift, 3) for t in entry["t"]]
        if before:
            series[name] = {
                "unit": before["unit"],
                "t": list(before["t"]) + times,
                "values": list(before["values"]) + values,
            }
        else:
            series[name] = {"unit": entry["unit"], "t": times, "values": values}
    notes = list(a.get("series_notes") or [])
    notes += [note for note in b.get("series_notes") or [] if note not in notes]
    spent = [s for s in (a.get("series_seconds"), b.get("series_seconds")) if s is not None]
    return {
        **a,
        "operations": operations,
        "intervals": list(a["intervals"]) + list(b["intervals"]),
        "seconds": a["seconds"] + b["seconds"],
        "unstarted": a["unstarted"] + b["unstarted"],
        "increments": a["increments"] + b["increments"],
        "warmup_increments": a["warmup_increments"] + b["warmup_increments"],
        "uncertain_increments": a["uncertain_increments"] + b["uncertain_increments"],
        "inserted": a["inserted"] + b["inserted"],
        "counters": sum_counters(counters) if counters else None,
        "server_lost": a.get("server_lost") or b.get("server_lost"),
        "series": series,
        "series_notes": notes,
        "series_seconds": sum(spent) if spent else None,
    }

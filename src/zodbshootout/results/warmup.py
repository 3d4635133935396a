"""The warm-up curve of a mix run: measured, not discarded.  Pure functions of a record.

Every benchmark throws its first seconds away (sysbench's ``--warmup-time``,
fio's ramp); relstorage#513 and opengever.core#1219 ask how long those
seconds are.  With ``--warmup 0`` the intervals from the workers' start
are the curve: for each start of new worker processes (the run's, and the
one after ``--restart-clients``), the seconds to open the database (a
persistent client cache is read then) and to the first committed
transaction, then per second since the start the client cache's hit rate
(its hits ÷ the connections' loads of the interval, every worker together)
and the p99.  A cold start and a start with a persistent cache (ZEO's
``client``, RelStorage's ``cache-local-dir``) are two databases of one
configuration, their curves side by side.
"""

from __future__ import annotations

import statistics
from typing import Any

from zodbshootout.results.mix import MixRecord

#: Seconds of each start the curve shows, at most.
CURVE_INTERVALS = 10


def startup(reports: list[dict[str, Any]]) -> dict[str, float | None]:
    """One stage's start from its workers' reports: the slowest worker's seconds.

    ``open_seconds``: opening the database; ``first_transaction_seconds``:
    from the measurement's start to the first commit.
    """

    def slowest(key: str) -> float | None:
        values = [float(r[key]) for r in reports if r.get(key) is not None]
        return max(values) if values else None

    return {
        "open_seconds": slowest("open_seconds"),
        "first_transaction_seconds": slowest("first_transaction_seconds"),
    }


def _summed(record: MixRecord, leaf: str, at: float) -> float | None:
    """The sum over workers of counter *leaf*'s last sample by *at* (seconds).

    A worker samples when it closes an interval, at its first transaction
    past the boundary: half an interval of slack takes that sample.
    """
    at += record.interval_length_seconds / 2
    total = 0.0
    found = False
    for name, series in record.series.items():
        if not name.startswith("client.") or name.rsplit(".", 1)[-1] != leaf:
            continue
        before = [v for t, v in zip(series.t, series.values, strict=True) if t <= at]
        if before:
            total += float(before[-1])
            found = True
    return total if found else None


def curves(record: MixRecord, starts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each start's curve: its startup and, per second since it, hit rate and p99.

    *starts*: the record's ``startup`` entries, one per stage.
    """
    length = record.interval_length_seconds
    restart = record.restart or {}
    firsts = [0]
    if restart.get("after_interval") is not None:
        firsts.append(int(restart["after_interval"]))
    gap = float(restart.get("gap_seconds") or 0.0)
    found = []
    for stage, first in enumerate(firsts):
        last = firsts[stage + 1] if stage + 1 < len(firsts) else len(record.intervals)
        points = []
        for index in range(first, min(last, first + CURVE_INTERVALS)):
            # Series times: the first stage's axis, the second's shifted past the gap.
            shift = gap if stage else 0.0
            end, begin = (index + 1) * length + shift, index * length + shift
            loads = [_summed(record, "loads", t) for t in (begin, end)]
            hits = [_summed(record, "cache_hits", t) for t in (begin, end)]
            rate = None
            if None not in loads and None not in hits and loads[1] - loads[0] > 0:  # type: ignore[operator]
                rate = (hits[1] - hits[0]) / (loads[1] - loads[0])  # type: ignore[operator]
            interval = record.intervals[index]
            points.append(
                {
                    "seconds": (index - first + 1) * length,
                    "hit_rate": None if rate is None else round(min(max(rate, 0.0), 1.0), 4),
                    "p99_ms": None if interval.p99_us is None else interval.p99_us / 1000,
                    "per_second": interval.transactions / length,
                }
            )
        entry = {"stage": stage, **(starts[stage] if stage < len(starts) else {})}
        entry["points"] = points
        found.append(entry)
    return found


def describe(curve: dict[str, Any]) -> str:
    """One start's curve in one line."""
    where = "the start" if curve["stage"] == 0 else "the restart (new processes)"
    opened, first = curve.get("open_seconds"), curve.get("first_transaction_seconds")
    head = f"warm-up from {where}:"
    if opened is not None:
        head += f" open {opened:.2f} s,"
    if first is not None:
        head += f" first transaction {first * 1000:.1f} ms later;"
    seconds = ", ".join(
        f"{p['seconds']:g} s {_percent(p['hit_rate'])} {_ms(p['p99_ms'])}"
        for p in curve["points"][:5]
    )
    return f"{head} hit rate and p99 by second: {seconds}"


def side_by_side(records: list[tuple[str, list[dict[str, Any]]]], stage: int) -> list[str]:
    """Lines of a table: per second since the start, each database's hit rate and p99."""
    columns = [
        (name, curve) for name, found in records for curve in found if curve["stage"] == stage
    ]
    if not columns:
        return []
    width = max(16, *(len(name) for name, _ in columns))
    lines = ["  s  " + "".join(f"{name:>{width}}" for name, _ in columns)]
    opened = [_seconds(curve.get("open_seconds")) for _, curve in columns]
    lines.append("  open" + "".join(f"{cell:>{width}}" for cell in opened))
    rows = max(len(curve["points"]) for _, curve in columns)
    for row in range(rows):
        cells = []
        for _name, curve in columns:
            points = curve["points"]
            cell = ""
            if row < len(points):
                cell = f"{_percent(points[row]['hit_rate'])} {_ms(points[row]['p99_ms'])}"
            cells.append(f"{cell:>{width}}")
        lines.append(f"  {row + 1:<3}" + "".join(cells))
    return lines


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f}ms"


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:.2f} s"


def mean_hit_rate(curve: dict[str, Any], seconds: int = 1) -> float | None:
    """The mean hit rate over the first *seconds* points (None if none is known)."""
    rates = [p["hit_rate"] for p in curve["points"][:seconds] if p["hit_rate"] is not None]
    return statistics.fmean(rates) if rates else None

"""An ``--rtt`` ladder's record and its fit: time per transaction against the RTT seen.

A run with ``--rtt`` measures each database with network servers once per
step of the ladder, as a column (a mix record) of its own named
``NAME@STEP`` (``zeo_fs@2ms``), so that every table, ``compare`` and
``plot`` reads it unchanged.  ``metadata["rtt"]`` says what each such row
is::

    {"ladder": [{"rtt_seconds": 0.002, "jitter_seconds": 0.0}, ...],
     "rows": {"zeo_fs@2ms": {"database": "zeo_fs", "asked_seconds": 0.002,
              "jitter_seconds": 0.0, "server": "zeo",
              "base_seconds": {"zeo": ...}, "proxied_seconds": {"zeo": ...}}},
     "unproxied": ["fs"],          # no server: measured once, the same at every step
     "fits": [...]}                # what :func:`classic_fits` / :func:`mix_fits` give

The fit is ordinary least squares of the time per transaction (a classic
phase: one worker's transaction of N objects, in the step's fastest
repetition; a mix operation: its mean service time) against the round trip
measured through the proxy (the best of the probe's), per
database and phase (or operation): time ≈ local cost + round trips × RTT,
so the slope *is* the round trips per transaction the RTT is paid for.
Pure functions of the result: no clock, no printing.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from zodbshootout.results.histogram import merge
from zodbshootout.results.record import CellKey, RunResult
from zodbshootout.results.work import CellWork, counted_cells

__all__ = ["RttFit", "classic_fits", "ladder_rows", "mix_fits", "row_name"]


def row_name(database: str, rtt_seconds: float, jitter_seconds: float = 0.0) -> str:
    """``zeo_fs@2ms``, ``zeo_fs@0.5ms±0.1``: a database's column at one step."""
    name = f"{database}@{rtt_seconds * 1e3:g}ms"
    return name + (f"±{jitter_seconds * 1e3:g}" if jitter_seconds else "")


@dataclass(frozen=True)
class RttFit:
    """Time per transaction of one phase or operation of a database against the RTT.

    points: (measured RTT through the proxy, seconds per transaction) per
    step; slope: added seconds per added second of RTT, i.e. round trips
    per transaction; counted: the round trips per transaction that --work
    counted (the mean over the steps), None without counts.
    """

    database: str
    what: str  # the phase or the operation
    object_count: int
    concurrency: int
    rows: tuple[str, ...]
    points: tuple[tuple[float, float], ...]
    slope: float
    intercept_seconds: float
    counted: float | None = None

    def as_data(self) -> dict[str, Any]:
        data = asdict(self)
        data["rows"] = list(self.rows)
        data["points"] = [list(point) for point in self.points]
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> RttFit:
        return cls(
            database=str(data["database"]),
            what=str(data["what"]),
            object_count=int(data.get("object_count", 0)),
            concurrency=int(data.get("concurrency", 0)),
            rows=tuple(data.get("rows", ())),
            points=tuple((float(x), float(y)) for x, y in data.get("points", ())),
            slope=float(data["slope"]),
            intercept_seconds=float(data["intercept_seconds"]),
            counted=None if data.get("counted") is None else float(data["counted"]),
        )


def ladder_rows(metadata: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ladder's rows by name, in the run's order ({} for a run without --rtt)."""
    return dict((metadata.get("rtt") or {}).get("rows") or {})


def measured_rtt(row: Mapping[str, Any]) -> float | None:
    """The round trip seen through the proxy to the row's database server (seconds)."""
    proxied = row.get("proxied_seconds") or {}
    server = row.get("server")
    if server in proxied:
        return float(proxied[server])
    return float(next(iter(proxied.values()))) if proxied else None


def _by_database(metadata: Mapping[str, Any]) -> dict[str, list[tuple[str, float]]]:
    """Each database's rows with a measured RTT, in ladder order."""
    found: dict[str, list[tuple[str, float]]] = {}
    for name, row in ladder_rows(metadata).items():
        rtt = measured_rtt(row)
        if rtt is not None:
            found.setdefault(str(row["database"]), []).append((name, rtt))
    return found


def _fit(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    xs = [x for x, _y in points]
    if len(points) < 2 or max(xs) == min(xs):
        return None
    slope, intercept = statistics.linear_regression(xs, [y for _x, y in points])
    return slope, intercept


def classic_fits(result: RunResult) -> list[RttFit]:
    """Per database, count, concurrency and phase: its fit over the steps measured (≥ 2).

    A step's time per transaction is its fastest repetition's (the mean of
    its workers'): the RTT it is paired with is the best of the probe's
    round trips, and load on the machine only ever adds time -- to the
    round trips of a busy repetition more than the RTT measured, which
    would steepen the line past the round trips counted.
    """
    rows_of = _by_database(result.metadata)
    seconds: dict[CellKey, float] = {}
    for key, by_repetition in result.cells():
        durations = [
            statistics.fmean(t.seconds / t.loops for t in timings)
            for timings in by_repetition.values()
            if timings
        ]
        if durations:
            seconds[key] = min(durations)
    counted = counted_cells(result)
    fits = []
    for database, rows in rows_of.items():
        for concurrency in result.concurrencies:
            for count in result.object_counts:
                for phase in result.phases:
                    cells = [(CellKey(name, concurrency, count, phase), rtt) for name, rtt in rows]
                    fit = _cells_fit(database, cells, seconds, counted)
                    if fit is not None:
                        fits.append(fit)
    return fits


def _cells_fit(
    database: str,
    cells: list[tuple[CellKey, float]],
    seconds: Mapping[CellKey, float],
    counted: Mapping[CellKey, CellWork],
) -> RttFit | None:
    """The fit of one phase's cells (each with its row's RTT), those measured; None if < 2."""
    points, names, trips = [], [], []
    for key, rtt in cells:
        if key in seconds:
            points.append((rtt, seconds[key]))
            names.append(key.database)
            work = counted.get(key)
            trip = work.per_transaction("round_trips") if work else None
            if trip is not None:
                trips.append(trip)
    line = _fit(points)
    if line is None:
        return None
    key = cells[0][0]
    return RttFit(
        database,
        key.phase,
        key.object_count,
        key.concurrency,
        tuple(names),
        tuple(points),
        *line,
        counted=statistics.fmean(trips) if trips else None,
    )


def mix_fits(result: RunResult) -> list[RttFit]:
    """Per database and operation: its mean service time's fit over the steps (≥ 2).

    The service time counts from the transaction's actual start (under
    --rate the latency also holds the wait for it); a closed loop records
    the latency alone, which is its service time.
    """
    records = {str(record["database"]): record for record in result.mix}
    fits = []
    for database, rows in _by_database(result.metadata).items():
        measured = [(name, rtt, records[name]) for name, rtt in rows if name in records]
        if len(measured) < 2:
            continue
        operations = list(measured[0][2]["operations"])
        for operation in operations:
            points, names = [], []
            for name, rtt, record in measured:
                entry = record["operations"].get(operation) or {}
                histogram = merge([entry.get("service") or entry["latency"]]) if entry else None
                if histogram is not None and histogram.get_total_count():
                    points.append((rtt, histogram.get_mean_value() / 1e6))
                    names.append(name)
            line = _fit(points)
            if line is not None:
                record = measured[0][2]
                fits.append(
                    RttFit(
                        database,
                        operation,
                        0,
                        int(record.get("concurrency", 0)),
                        tuple(names),
                        tuple(points),
                        *line,
                    )
                )
    return fits


def stored_fits(metadata: Mapping[str, Any]) -> list[RttFit]:
    """The fits a run stored (``metadata["rtt"]["fits"]``)."""
    return [RttFit.from_data(fit) for fit in (metadata.get("rtt") or {}).get("fits") or []]

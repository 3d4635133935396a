"""The chart of an ``--rtt`` ladder: throughput (and a mix run's p99) against the RTT seen.

A ladder's rows (``NAME@STEP``) are columns like any database's; this chart
puts them back on one x axis, the round trip each row measured through its
proxy (:func:`zodbshootout.results.rtt.measured_rtt`), never the one asked
for.  A classic run gets one small chart per phase, a line per database
(and object count and concurrency when the run holds several), objects per
second on a log axis; a mix run two charts, transactions per second and
p99, a line per database and operation.  Databases without a server are
measured once: they have no RTT, and are left out.
"""

from __future__ import annotations

from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.render.plot import _image_format, _pyplot, _save, _short_formatter, rate_unit
from zodbshootout.results.record import CellKey, RunResult
from zodbshootout.results.rtt import ladder_rows, measured_rtt
from zodbshootout.results.stats import cell_stats

#: (label, [(rtt ms, value)]) of one line of a chart.
Points = list[tuple[float, float]]

_STYLES = ("-", "--", ":", "-.")


def is_ladder(result: RunResult) -> bool:
    """Whether *result* has a ladder with some database measured at two RTTs or more."""
    return any(len(rows) > 1 for rows in _rows_by_database(result).values())


def _rows_by_database(result: RunResult) -> dict[str, list[tuple[str, float]]]:
    """Each database's rows (name, RTT ms) in ladder order, those measured."""
    measured = set(result.databases) | {str(record.get("database")) for record in result.mix}
    found: dict[str, list[tuple[str, float]]] = {}
    for name, row in ladder_rows(result.metadata).items():
        rtt = measured_rtt(row)
        if rtt is not None and name in measured:
            found.setdefault(str(row["database"]), []).append((name, rtt * 1e3))
    return found


def classic_lines(result: RunResult, aggregate: str = "mean") -> dict[str, dict[str, Points]]:
    """Per phase, per line label: (RTT ms, objects/s) of each row measured."""
    several = len(result.object_counts) > 1 or len(result.concurrencies) > 1
    charts: dict[str, dict[str, Points]] = {}
    for database, rows in _rows_by_database(result).items():
        for phase in result.phases:
            for concurrency in result.concurrencies:
                for count in result.object_counts:
                    points = []
                    for name, rtt in rows:
                        stats = cell_stats(result, CellKey(name, concurrency, count, phase))
                        if stats is not None:
                            points.append((rtt, stats.aggregate(aggregate)))
                    if points:
                        label = f"{database} n={count} c={concurrency}" if several else database
                        charts.setdefault(phase, {})[label] = points
    return charts


def mix_lines(result: RunResult) -> dict[str, dict[str, Points]]:
    """``tx/s`` and ``p99 ms``, per line (database and operation): (RTT ms, value)."""
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_stats import summarize

    run = MixRun.of(result)
    charts: dict[str, dict[str, Points]] = {"tx/s": {}, "p99 ms": {}}
    for database, rows in _rows_by_database(result).items():
        for name, rtt in rows:
            record = run.record(name)
            if record is None:
                continue
            for row in summarize(record):
                label = f"{database} {row.operation}"
                charts["tx/s"].setdefault(label, []).append((rtt, row.per_second))
                p99 = row.percentiles_ms.get(99.0)
                if p99 is not None and p99 == p99:
                    charts["p99 ms"].setdefault(label, []).append((rtt, p99))
    return charts


def build_rtt_figure(result: RunResult, aggregate: str = "mean") -> Any:
    """The figure: a chart per phase (classic) or tx/s and p99 (mix); the caller closes it."""
    plt = _pyplot()
    charts = mix_lines(result) if result.mix else classic_lines(result, aggregate)
    charts = {title: lines for title, lines in charts.items() if lines}
    if not charts:
        raise UsageError("nothing to plot: no row of this --rtt ladder was measured")
    columns = min(3, len(charts))
    rows = -(-len(charts) // columns)
    figure = plt.figure(figsize=(max(8.0, 4.6 * columns), 1.2 + 3.6 * rows), layout="constrained")
    databases = list(_rows_by_database(result))
    for index, (title, lines) in enumerate(charts.items()):
        axes = figure.add_subplot(rows, columns, index + 1)
        operations: list[str] = []
        for label, points in lines.items():
            points = sorted(points)
            style: dict[str, Any] = {}
            if result.mix:  # a colour per database, a line style per operation
                database, _, operation = label.rpartition(" ")
                if operation not in operations:
                    operations.append(operation)
                style["color"] = f"C{databases.index(database) % 10}"
                style["linestyle"] = _STYLES[operations.index(operation) % len(_STYLES)]
            xs, ys = [x for x, _y in points], [y for _x, y in points]
            axes.plot(xs, ys, marker="o", label=label, **style)
        if result.mix:
            axes.set_title("throughput" if title == "tx/s" else "p99 latency")
            axes.set_ylabel("transactions/s" if title == "tx/s" else "p99 (ms)")
            if title != "tx/s":
                axes.set_yscale("log")
        else:
            axes.set_title(title)
            axes.set_ylabel(f"{rate_unit(title)} (log scale)")
            axes.set_yscale("log")
        axes.yaxis.set_major_formatter(_short_formatter())
        axes.yaxis.set_minor_formatter(_short_formatter())
        axes.tick_params(axis="y", which="minor", labelsize="x-small")
        axes.set_xlabel("round trip measured (ms)")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize="x-small")
    what = "mix" if result.mix else "classic"
    figure.suptitle(f"zodbshootout --rtt ({what}): against the round trip each step measured")
    return figure


def plot_rtt(result: RunResult, path: str, aggregate: str = "mean") -> None:
    """Draw :func:`build_rtt_figure` into *path* (.png, .svg, .pdf)."""
    _image_format(path)
    _save(build_rtt_figure(result, aggregate), path)

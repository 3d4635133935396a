"""Charts of a run: rate per phase and database, and rate against object count or concurrency.

The first chart is a grouped bar chart: one group per phase, one bar per
database, error bars of one standard deviation.  Its y axis is logarithmic
because steamin reads are about a thousand times faster than adds; on a
linear axis the writes would be invisible.  When a run holds several
object counts or concurrency levels, one small chart per phase follows,
plotting the rate against them.

matplotlib is the optional extra ``plot`` (``pip install '.[plot]'``); without it
:func:`plot_result` raises a UsageError that names the extra.
"""

from __future__ import annotations

import io
from typing import Any

from zodbshootout.drivers import install_hint
from zodbshootout.errors import UsageError
from zodbshootout.outputfile import check_output_target, write_atomically
from zodbshootout.results import CellKey, RunResult
from zodbshootout.stats import cell_stats

_FORMATS = ("png", "svg", "pdf")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise UsageError(f"plotting needs matplotlib: {install_hint('plot')}") from None
    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    return plt


def plot_result(result: RunResult, path: str, aggregate: str = "mean") -> None:
    """Draw *result* into *path*; its extension (.png, .svg, .pdf) picks the format."""
    extension = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if extension not in _FORMATS:
        raise UsageError(f"cannot tell the image format of {path!r}: end it in .png, .svg or .pdf")
    check_output_target(path)
    if not result.measurements:
        raise UsageError("nothing to plot: no cell of this run was measured")
    plt = _pyplot()
    figure = build_figure(result, aggregate)
    image = io.BytesIO()
    try:
        figure.savefig(image, format=extension, dpi=110)
    finally:
        plt.close(figure)
    try:
        write_atomically(path, image.getvalue())
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def build_figure(result: RunResult, aggregate: str = "mean") -> Any:
    """The matplotlib Figure: the bar chart on top, then one sweep chart per phase.

    The caller closes it (``matplotlib.pyplot.close``).
    """
    plt = _pyplot()
    sweeps = [
        axis
        for axis, values in (
            ("object_count", result.object_counts),
            ("concurrency", result.concurrencies),
        )
        if len(values) > 1
    ]
    phases = list(result.phases)
    columns = min(4, len(phases))
    sweep_rows = [(axis, -(-len(phases) // columns)) for axis in sweeps]
    height_ratios = [2.2] + [1.0] * sum(rows for _axis, rows in sweep_rows)
    figure = plt.figure(
        figsize=(
            max(8.0, 1.6 * len(phases) + 2.0, 2.8 * columns + 0.5),
            4.5 + 2.8 * (len(height_ratios) - 1),
        ),
        layout="constrained",
    )
    grid = figure.add_gridspec(len(height_ratios), columns, height_ratios=height_ratios)
    _bar_chart(figure.add_subplot(grid[0, :]), result, aggregate)
    row = 1
    for axis, rows in sweep_rows:
        for index, phase in enumerate(phases):
            subplot = figure.add_subplot(grid[row + index // columns, index % columns])
            _sweep_chart(subplot, result, phase, axis, aggregate, legend=index == 0)
        row += rows
    return figure


def _rate(result: RunResult, key: CellKey, aggregate: str) -> tuple[float, float] | None:
    stats = cell_stats(result, key)
    if stats is None:
        return None
    return stats.aggregate(aggregate), stats.stddev


def _bar_chart(axes: Any, result: RunResult, aggregate: str) -> None:
    """One group per phase, one bar per database, at the largest count and concurrency."""
    count = max(result.object_counts)
    concurrency = max(result.concurrencies)
    phases = list(result.phases)
    databases = list(result.databases)
    width = 0.8 / max(1, len(databases))
    lowest = None
    for d, database in enumerate(databases):
        xs, heights, errors = [], [], []
        for p, phase in enumerate(phases):
            rate = _rate(result, CellKey(database, concurrency, count, phase), aggregate)
            if rate is None:
                continue
            xs.append(p - 0.4 + width * (d + 0.5))
            heights.append(rate[0])
            # On a log axis an error bar may not reach zero or below.
            errors.append(min(rate[1], rate[0] * 0.9))
        spread = errors if any(errors) else None  # no caps drawn for a zero spread
        bars = axes.bar(xs, heights, width, yerr=spread, capsize=2, label=database)
        axes.bar_label(bars, [_short(h) for h in heights], padding=2, fontsize="x-small")
        if heights:
            lowest = min([*heights, *([lowest] if lowest else [])])
    if lowest:
        axes.set_yscale("log")
        # Room below the slowest bar, so that every bar has a visible length.
        axes.set_ylim(bottom=lowest / 4)
    else:  # a log axis needs a positive value; say why there is none
        _say_not_measured(axes)
    axes.set_xticks(range(len(phases)), phases)
    axes.set_ylabel("objects per second (log scale)")
    what = "mean" if aggregate == "mean" else "best"
    title = f"{count} objects, concurrency {concurrency}: "
    if result.repetitions > 1:
        title += f"{what} of {result.repetitions} repetitions, bars ±1 stddev"
    else:
        title += "1 repetition"
    axes.set_title(title)
    axes.grid(axis="y", which="major", alpha=0.4)
    axes.legend(loc="best", fontsize="small")


def _short(rate: float) -> str:
    """18.8k, 9.39M: bar labels that fit above a narrow bar."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rate >= limit:
            return f"{rate / limit:.3g}{suffix}"
    return f"{rate:.3g}"


def _say_not_measured(axes: Any) -> None:
    axes.text(0.5, 0.5, "not measured", transform=axes.transAxes, ha="center", va="center")


def _sweep_chart(
    axes: Any, result: RunResult, phase: str, axis: str, aggregate: str, legend: bool
) -> None:
    """Rate against object count (at the largest concurrency) or concurrency (largest count)."""
    measured = False
    for database in result.databases:
        xs, ys = [], []
        if axis == "object_count":
            concurrency = max(result.concurrencies)
            for count in result.object_counts:
                rate = _rate(result, CellKey(database, concurrency, count, phase), aggregate)
                if rate is not None:
                    xs.append(count)
                    ys.append(rate[0])
        else:
            count = max(result.object_counts)
            for concurrency in result.concurrencies:
                rate = _rate(result, CellKey(database, concurrency, count, phase), aggregate)
                if rate is not None:
                    xs.append(concurrency)
                    ys.append(rate[0])
        axes.plot(xs, ys, marker="o", label=database)
        measured = measured or any(y > 0 for y in ys)
    if axis == "object_count":
        axes.set_xscale("log")
        axes.set_xticks(result.object_counts, [str(n) for n in result.object_counts])
        axes.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
        axes.set_xlabel(f"objects (c={max(result.concurrencies)})")
    else:
        axes.set_xlabel(f"concurrency (n={max(result.object_counts)})")
        axes.set_xticks(result.concurrencies)
    if measured:
        axes.set_yscale("log")
    else:
        _say_not_measured(axes)
    axes.set_title(phase)
    axes.set_ylabel("objects/s")
    axes.grid(alpha=0.4)
    if legend:
        axes.legend(fontsize="x-small")

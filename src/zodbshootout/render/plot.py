"""Charts of saved runs: one run, two runs compared, and a history of runs.

For one run: rate per phase and database, and rate against object count or concurrency.

The first chart is a grouped bar chart: one group per phase, one bar per
database, error bars of one standard deviation.  Its y axis is logarithmic
because steamin reads are about a thousand times faster than adds; on a
linear axis the writes would be invisible.  When a run holds several
object counts or concurrency levels, one small chart per phase follows,
plotting the rate against them.

Two runs become one bar per cell of the ratio of their rates
(:mod:`zodbshootout.render.ratio_chart`); a history (:func:`plot_history`)
one line per database over the runs, per phase.

matplotlib is the optional extra ``plot`` (``pip install '.[plot]'``); without it
every plot raises a UsageError that says how to install it.
"""

from __future__ import annotations

import io
import math
import warnings
from typing import Any

from zodbshootout.errors import UsageError, install_hint
from zodbshootout.outputfile import check_output_target, write_atomically
from zodbshootout.results.history import HistoryRow, SavedRun, column_names
from zodbshootout.results.record import CellKey, RunResult
from zodbshootout.results.stats import cell_stats

_FORMATS = ("png", "svg", "pdf")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise UsageError(
            f"plotting needs matplotlib: {install_hint('plot')} (or pip install matplotlib)"
        ) from None
    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    return plt


def plot_result(result: RunResult, path: str, aggregate: str = "mean") -> None:
    """Draw *result* into *path*; its extension (.png, .svg, .pdf) picks the format."""
    _image_format(path)
    if not result.measurements:
        raise UsageError("nothing to plot: no cell of this run was measured")
    _save(build_figure(result, aggregate), path)


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
    axes.set_xticks(range(len(phases)), [_bar_label(phase) for phase in phases])
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


def rate_unit(phase: str) -> str:
    """What a phase's rate counts per second: connections for ``open``, else objects."""
    return "connections/s" if phase == "open" else "objects/s"


def _bar_label(phase: str) -> str:
    """A phase under its bars; one whose rate counts something else says what."""
    unit = rate_unit(phase)
    return phase if unit == "objects/s" else f"{phase}\n({unit})"


def _short_formatter() -> Any:
    """Tick labels like 20.1M instead of an offset ("1e7") above the axis."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _position: _short(value))


def _short(rate: float) -> str:
    """18.8k, 9.39M: bar labels that fit above a narrow bar."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if rate >= limit:
            return f"{rate / limit:.3g}{suffix}"
    return f"{rate:.3g}"


def _say_not_measured(axes: Any) -> None:
    axes.text(0.5, 0.5, "not measured", transform=axes.transAxes, ha="center", va="center")


def _sweep(result: RunResult, database: str, phase: str, axis: str) -> list[tuple[int, CellKey]]:
    """The cells of a sweep along *axis*, each with its x: the other axis at its largest."""
    if axis == "object_count":
        concurrency = max(result.concurrencies)
        return [
            (count, CellKey(database, concurrency, count, phase)) for count in result.object_counts
        ]
    count = max(result.object_counts)
    return [(c, CellKey(database, c, count, phase)) for c in result.concurrencies]


def _sweep_chart(
    axes: Any, result: RunResult, phase: str, axis: str, aggregate: str, legend: bool
) -> None:
    """Rate against object count (at the largest concurrency) or concurrency (largest count)."""
    measured = False
    for database in result.databases:
        xs, ys = [], []
        for x, key in _sweep(result, database, phase, axis):
            rate = _rate(result, key, aggregate)
            if rate is not None:
                xs.append(x)
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
    axes.set_ylabel(rate_unit(phase))
    axes.grid(alpha=0.4)
    if legend:
        axes.legend(fontsize="x-small")


def _image_format(path: str) -> str:
    """The format *path*'s extension names; a UsageError for a target not to write.

    Checked before drawing, so that a mistake costs no time.
    """
    extension = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if extension not in _FORMATS:
        raise UsageError(f"cannot tell the image format of {path!r}: end it in .png, .svg or .pdf")
    check_output_target(path)
    return extension


def _save(figure: Any, path: str) -> None:
    """Write *figure* to *path* (format from its extension) and close it.

    Rendered in memory, then written like every output file (see
    :mod:`zodbshootout.outputfile`): atomically, and never over a device,
    FIFO, socket, directory or symbolic link.
    """
    plt = _pyplot()
    image = io.BytesIO()
    try:
        with warnings.catch_warnings():
            # A name from a result file may hold a character no font draws (a
            # control character): it is drawn as a box, not worth a warning.
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            figure.savefig(image, format=_image_format(path), dpi=110)
    finally:
        plt.close(figure)
    try:
        write_atomically(path, image.getvalue())
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def plot_history(
    runs: list[SavedRun], rows: list[HistoryRow], path: str, aggregate: str = "mean"
) -> None:
    """Draw each cell's rate over the saved *runs* into *path*."""
    _save(build_history_figure(runs, rows, aggregate), path)


def _draw_history_lines(
    axes: Any, xs: list[int], rows: list[HistoryRow], labels: tuple[bool, bool], aggregate: str
) -> list[float]:
    """One line per row of a phase over the runs; the rates drawn (for the axis's scale).

    *labels* says whether the lines are told apart by object count and by
    concurrency too (when the rows have several of them).
    """
    spread: list[float] = []
    several_counts, several_levels = labels
    for row in rows:
        label = row.key.database
        if several_counts:
            label += f" n={row.key.object_count}"
        if several_levels:
            label += f" c={row.key.concurrency}"
        points = [
            (x, stats.aggregate(aggregate), stats.ci95_half_width or 0.0)
            for x, stats in zip(xs, row.stats, strict=True)
            if stats is not None and math.isfinite(stats.aggregate(aggregate))
        ]
        if not points:
            continue
        px, py, errors = zip(*points, strict=True)
        spread += py
        axes.errorbar(
            px,
            py,
            yerr=[min(e, y * 0.9) for y, e in zip(py, errors, strict=True)],
            marker="o",
            capsize=3,
            label=label,
        )
    return spread


def build_history_figure(
    runs: list[SavedRun], rows: list[HistoryRow], aggregate: str = "mean"
) -> Any:
    """One small chart per phase: a line per database (and count, concurrency) over the runs.

    The error bars are each run's 95% confidence interval of the mean rate
    (none for a run with one repetition); every y axis is logarithmic when
    the rates of the figure span more than a factor of ten, else every one
    is linear (never some of each: a reader compares the charts side by side).
    """
    plt = _pyplot()
    phases = list(dict.fromkeys(row.key.phase for row in rows))
    columns = min(3, len(phases))
    lines = -(-len(phases) // columns)
    figure = plt.figure(figsize=(max(8.0, 4.6 * columns), 1.2 + 3.4 * lines), layout="constrained")
    names = column_names(runs)
    several_counts = len({row.key.object_count for row in rows}) > 1
    several_levels = len({row.key.concurrency for row in rows}) > 1
    xs = list(range(len(runs)))
    spread: list[float] = []
    charts = []
    for index, phase in enumerate(phases):
        axes = figure.add_subplot(lines, columns, index + 1)
        labels = (several_counts, several_levels)
        spread += _draw_history_lines(
            axes, xs, [r for r in rows if r.key.phase == phase], labels, aggregate
        )
        axes.set_title(phase)
        axes.set_ylabel(rate_unit(phase))
        axes.set_xticks(xs, names, rotation=30, ha="right", fontsize="small")
        axes.set_xlim(-0.5, len(runs) - 0.5)
        axes.grid(alpha=0.4)
        if index == 0:
            axes.legend(fontsize="x-small")
        charts.append(axes)
    # One scale for every chart of the figure, so that equal heights mean equal ratios.
    logarithmic = bool(spread) and max(spread) > 10 * min(spread)
    for axes in charts:
        if logarithmic:
            axes.set_yscale("log")
        else:
            axes.yaxis.set_major_formatter(_short_formatter())
    what = "mean" if aggregate == "mean" else "best"
    figure.suptitle(
        f"Rates over {len(runs)} runs, oldest first ({what} of each run's "
        "repetitions; error bars: 95% confidence interval)"
    )
    return figure

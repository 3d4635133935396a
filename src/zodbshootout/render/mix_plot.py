"""Charts of a saved mix run: the percentile spectrum and latency over time.

The spectrum plots each database's latency (every operation together)
against the percentile on a "nines" axis (50 %, 90 %, 99 %, 99.9 % equally
spaced), as HdrHistogram's own plots do: the tail, where storages differ,
gets as much room as the median.  Latency over time plots p50 and p99 of each
interval, with the throughput below, so a drift (ZEO#200) shows as a slope.

Two runs (``plot BASE.json CHANGED.json``) share the same charts: one colour
per database, the base drawn solid and the changed run dashed, each labelled
with the run's name, and the legend gives each database's p99 change as
``compare`` reports it (every operation together, ``*`` when significant).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.render.plot import _image_format, _pyplot, _save
from zodbshootout.results.histogram import merge
from zodbshootout.results.mix import MixRecord, MixRun
from zodbshootout.results.mix_compare import MetricComparison, compare_mix
from zodbshootout.results.mix_series import Line, chosen, panels
from zodbshootout.results.mix_stats import ALL, interval_series

#: The percentiles the spectrum is drawn through.
SPECTRUM = (0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999)
_TICKS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)


def _nines(percentile: float) -> float:
    """The spectrum's x: 1 ÷ (1 − p), so each further nine is one decade right."""
    return 1.0 / (1.0 - percentile / 100.0)


def spectrum(record: MixRecord) -> list[tuple[float, float]]:
    """(percentile, latency ms) of every operation of *record* together."""
    histogram = merge([entry.latency for entry in record.operations.values()])
    count = histogram.get_total_count()
    if not count:
        return []
    # Percentiles beyond one sample in the histogram say nothing more than the max.
    usable = [p for p in SPECTRUM if p == 0.0 or _nines(p) <= count]
    values = histogram.get_percentile_to_value_dict(usable)
    return [(p, values[p] / 1000) for p in usable]


def plot_mix(run: MixRun, path: str, patterns: Sequence[str] | None = None) -> None:
    """Draw *run*'s spectrum, latency and throughput over time, and its series below them,
    into *path* (.png, .svg, .pdf); *patterns* choose the series (see results.mix_series)."""
    _image_format(path)
    if not run.records:
        raise UsageError("nothing to plot: no database of this mix run was measured")
    check_patterns(run, patterns)
    _save(build_mix_figure(run, patterns), path)


def check_patterns(run: MixRun, patterns: Sequence[str] | None) -> None:
    """A UsageError when chosen *patterns* match none of the run's series (naming them)."""
    if patterns is None or series_groups(run, patterns):
        return
    names = sorted({name for record in run.records for name in chosen(record, ["*"])})
    if not names:
        raise UsageError("--series: this mix run sampled no series")
    raise UsageError(
        f"--series {' '.join(patterns)} matches no series; the run has: {', '.join(names)}"
    )


def build_mix_figure(run: MixRun, patterns: Sequence[str] | None = None) -> Any:
    """The figure of :func:`plot_mix` (the caller closes it).

    The spectrum on top; then p99 and p50, throughput, and one panel per group
    of series (one source, kind and unit; see :func:`series_groups`), all on the
    same time axis (``sharex``), one colour per database.
    """
    plt = _pyplot()
    groups = series_groups(run, patterns)
    heights = [2.2, 1.6, 1.0] + [1.0] * len(groups)
    figure = plt.figure(figsize=(9, 4.0 + 2.3 * (len(heights) - 1)), layout="constrained")
    grid = figure.add_gridspec(len(heights), 1, height_ratios=heights)
    top = figure.add_subplot(grid[0])
    middle = figure.add_subplot(grid[1])
    bottom = figure.add_subplot(grid[2], sharex=middle)
    figure.suptitle(f"zodbshootout mix: {run.workload or 'mix'}")
    _spectrum_chart(top, run)
    _time_charts(middle, bottom, run)
    colours = {record.database: f"C{i}" for i, record in enumerate(run.records)}
    for row, (title, lines) in enumerate(groups.items(), start=3):
        axes = figure.add_subplot(grid[row], sharex=middle)
        _series_chart(axes, title, lines, colours)
    if groups:
        # One time axis: its numbers and label under the last panel only.
        bottom.set_xlabel("")
        for axes in figure.axes[1:-1]:
            axes.tick_params(labelbottom=False)
        figure.axes[-1].set_xlabel("seconds into the measured run")
    return figure


def series_groups(
    run: MixRun, patterns: Sequence[str] | None = None
) -> dict[str, list[tuple[str, Line]]]:
    """Each panel's title and its lines, (database, line), every database's together."""
    groups: dict[str, list[tuple[str, Line]]] = {}
    for record in run.records:
        for panel in panels(record, patterns):
            groups.setdefault(panel.title, []).extend((record.database, ln) for ln in panel.lines)
    return groups


_STYLES = ("-", "--", ":", "-.")


def _series_chart(
    axes: Any, title: str, lines: list[tuple[str, Line]], colours: dict[str, str]
) -> None:
    """One panel: a line per database and series, the database's colour, a style per series."""
    fields = list(dict.fromkeys(line.label for _database, line in lines))
    several = len(colours) > 1
    megabytes = title.endswith(": bytes") or title.endswith(": bytes/s")
    for database, line in lines:
        values = [v / 1e6 for v in line.values] if megabytes else list(line.values)
        label = f"{database}: {line.label}" if several else line.label
        style = _STYLES[fields.index(line.label) % len(_STYLES)]
        axes.plot(line.t, values, color=colours[database], linestyle=style, label=label)
    axes.set_title(title.replace("bytes", "MB") if megabytes else title, fontsize="medium")
    # From zero, with a little room below it: a series at zero shows above the axis.
    top = max(axes.get_ylim()[1], 1.0)
    axes.set_ylim(-0.04 * top, top)
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="x-small", ncol=2)


def _spectrum_chart(axes: Any, run: MixRun) -> None:
    widest = 1.0
    for record in run.records:
        widest = max(widest, _spectrum_line(axes, record, label=record.database))
    _spectrum_axes(axes, widest)


def _spectrum_line(axes: Any, record: MixRecord, **style: Any) -> float:
    """Draw *record*'s spectrum; return its widest x (1 when it has no transaction)."""
    points = spectrum(record)
    if not points:
        return 1.0
    axes.plot([_nines(p) for p, _ms in points], [ms for _p, ms in points], marker=".", **style)
    return max(_nines(p) for p, _ms in points)


def _spectrum_axes(axes: Any, widest: float) -> None:
    axes.set_xscale("log")
    axes.set_yscale("log")
    ticks = [p for p in _TICKS if _nines(p) <= widest] or [_TICKS[0]]
    axes.set_xticks([_nines(p) for p in ticks])
    axes.set_xticklabels([f"{p:g}%" for p in ticks])
    axes.set_xlim(1.0, max(widest, _nines(ticks[-1])) * 1.5)
    axes.set_xlabel("percentile")
    axes.set_ylabel("latency (ms)")
    axes.set_title("Latency by percentile (all operations)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize="small")


def _time_charts(latency_axes: Any, rate_axes: Any, run: MixRun) -> None:
    for index, record in enumerate(run.records):
        color = f"C{index}"
        seconds = record.interval_length_seconds
        p99 = interval_series(record, "p99_ms")
        p50 = interval_series(record, "p50_ms")
        rate = interval_series(record, "per_second")
        times = [seconds * (i + 1) for i in range(len(rate))]
        name = record.database
        if len(p99) == len(times):
            latency_axes.plot(times, p99, color=color, label=f"{name} p99")
        if len(p50) == len(times):
            latency_axes.plot(times, p50, color=color, linestyle="--", label=f"{name} p50")
        rate_axes.plot(times, rate, color=color, label=name)
    _label_time_charts(latency_axes, rate_axes, "latency (ms)", "Latency over time (per interval)")
    rate_axes.legend(fontsize="x-small")


def _label_time_charts(latency_axes: Any, rate_axes: Any, ylabel: str, title: str) -> None:
    """Axes, scales and grids of a latency chart over a throughput chart, both over time."""
    latency_axes.set_yscale("log")
    latency_axes.set_ylabel(ylabel)
    latency_axes.set_title(title)
    latency_axes.grid(True, alpha=0.3)
    latency_axes.legend(fontsize="x-small", ncol=2)
    rate_axes.set_xlabel("seconds into the measured run")
    rate_axes.set_ylabel("transactions/s")
    rate_axes.set_ylim(bottom=0)
    rate_axes.grid(True, alpha=0.3)


# --- Two runs -----------------------------------------------------------------------------


def _p99_changes(rows: list[MetricComparison]) -> dict[str, str]:
    """Each database's whole-run p99 change as compare reports it: ``p99 +99.9% *``.

    The whole run is the ``all`` row, or the one operation of a single-operation workload.
    """
    by_database: dict[str, list[MetricComparison]] = {}
    for row in rows:
        if row.metric == "p99":
            by_database.setdefault(row.database, []).append(row)
    changes = {}
    for database, p99s in by_database.items():
        whole = next((row for row in p99s if row.operation == ALL), None)
        if whole is None and len(p99s) == 1:
            whole = p99s[0]
        if whole is None or whole.ratio != whole.ratio:  # NaN: no base p99
            continue
        changes[database] = f"p99 {whole.ratio - 1:+.1%}" + (" *" if whole.significant else "")
    return changes


def plot_mix_comparison(
    base: MixRun, changed: MixRun, base_name: str, changed_name: str, path: str
) -> None:
    """Draw both runs' spectra and latency over time, per database both measured, into *path*."""
    _image_format(path)
    rows = compare_mix(base, changed)
    pairs = [(r, other) for r in base.records if (other := changed.record(r.database)) is not None]
    if not pairs:
        raise UsageError(f"{base_name} and {changed_name} have no database in common")
    changes = _p99_changes(rows)
    plt = _pyplot()
    figure, (top, middle, bottom) = plt.subplots(
        3, 1, figsize=(9, 11), gridspec_kw={"height_ratios": [2.2, 1.6, 1.0]}
    )
    figure.suptitle(f"zodbshootout mix: {changed_name} (dashed) against {base_name} (solid)")
    widest = 1.0
    for index, (ours, other) in enumerate(pairs):
        name = ours.database
        color = f"C{index}"
        widest = max(widest, _spectrum_line(top, ours, color=color, label=f"{name}: {base_name}"))
        label = f"{name}: {changed_name} ({changes.get(name, 'p99 -')})"
        widest = max(widest, _spectrum_line(top, other, color=color, linestyle="--", label=label))
        for record, run, linestyle in ((ours, base_name, "-"), (other, changed_name, "--")):
            _over_time(middle, bottom, record, f"{name}: {run}", color=color, linestyle=linestyle)
    _spectrum_axes(top, widest)
    top.set_title("Latency by percentile (all operations); *: the p99 changed significantly")
    _label_time_charts(middle, bottom, "p99 latency (ms)", "p99 over time (per interval)")
    figure.tight_layout()
    _save(figure, path)


def _over_time(
    latency_axes: Any, rate_axes: Any, record: MixRecord, label: str, **style: Any
) -> None:
    """One run's p99 and throughput per interval."""
    seconds = record.interval_length_seconds
    rate = interval_series(record, "per_second")
    times = [seconds * (i + 1) for i in range(len(rate))]
    p99 = interval_series(record, "p99_ms")
    if p99 and len(p99) == len(times):
        latency_axes.plot(times, p99, label=label, **style)
    rate_axes.plot(times, rate, **style)

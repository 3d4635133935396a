"""Charts of a saved mix run: the percentile spectrum and latency over time.

The spectrum plots each database's latency (every operation together)
against the percentile on a "nines" axis (50 %, 90 %, 99 %, 99.9 % equally
spaced), as HdrHistogram's own plots do: the tail, where storages differ,
gets as much room as the median.  Latency over time plots p50 and p99 of each
interval, with the throughput below, so a drift (ZEO#200) shows as a slope.
"""

from __future__ import annotations

from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.mix.recorder import merge
from zodbshootout.mix.stats import interval_series
from zodbshootout.render.plot import _image_format, _pyplot, _save
from zodbshootout.results.record import RunResult

#: The percentiles the spectrum is drawn through.
SPECTRUM = (0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999)
_TICKS = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)


def _nines(percentile: float) -> float:
    """The spectrum's x: 1 ÷ (1 − p), so each further nine is one decade right."""
    return 1.0 / (1.0 - percentile / 100.0)


def spectrum(record: dict[str, Any]) -> list[tuple[float, float]]:
    """(percentile, latency ms) of every operation of *record* together."""
    histogram = merge([entry["latency"] for entry in record["operations"].values()])
    count = histogram.get_total_count()
    if not count:
        return []
    # Percentiles beyond one sample in the histogram say nothing more than the max.
    usable = [p for p in SPECTRUM if p == 0.0 or _nines(p) <= count]
    values = histogram.get_percentile_to_value_dict(usable)
    return [(p, values[p] / 1000) for p in usable]


def plot_mix(result: RunResult, path: str) -> None:
    """Draw *result*'s spectrum and latency over time into *path* (.png, .svg, .pdf)."""
    _image_format(path)
    if not result.mix:
        raise UsageError("nothing to plot: no database of this mix run was measured")
    plt = _pyplot()
    figure, (top, middle, bottom) = plt.subplots(
        3, 1, figsize=(9, 11), gridspec_kw={"height_ratios": [2.2, 1.6, 1.0]}
    )
    workload = result.metadata.get("mix", {}).get("workload", "mix")
    figure.suptitle(f"zodbshootout mix: {workload}")
    _spectrum_chart(top, result)
    _time_charts(middle, bottom, result)
    figure.tight_layout()
    _save(figure, path)


def _spectrum_chart(axes: Any, result: RunResult) -> None:
    widest = 1.0
    for record in result.mix:
        points = spectrum(record)
        widest = max([widest, *(_nines(p) for p, _ms in points)])
        if points:
            axes.plot(
                [_nines(p) for p, _ms in points],
                [ms for _p, ms in points],
                marker=".",
                label=record["database"],
            )
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


def _time_charts(latency_axes: Any, rate_axes: Any, result: RunResult) -> None:
    for index, record in enumerate(result.mix):
        color = f"C{index}"
        seconds = record.get("interval_seconds") or 1.0
        p99 = interval_series(record, "p99_ms")
        p50 = interval_series(record, "p50_ms")
        rate = interval_series(record, "per_second")
        times = [seconds * (i + 1) for i in range(len(rate))]
        name = record["database"]
        if len(p99) == len(times):
            latency_axes.plot(times, p99, color=color, label=f"{name} p99")
        if len(p50) == len(times):
            latency_axes.plot(times, p50, color=color, linestyle="--", label=f"{name} p50")
        rate_axes.plot(times, rate, color=color, label=name)
    latency_axes.set_yscale("log")
    latency_axes.set_ylabel("latency (ms)")
    latency_axes.set_title("Latency over time (per interval)")
    latency_axes.grid(True, alpha=0.3)
    latency_axes.legend(fontsize="x-small", ncol=2)
    rate_axes.set_xlabel("seconds into the measured run")
    rate_axes.set_ylabel("transactions/s")
    rate_axes.set_ylim(bottom=0)
    rate_axes.grid(True, alpha=0.3)
    rate_axes.legend(fontsize="x-small")

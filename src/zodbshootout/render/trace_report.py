"""The trace analyzer's output: lines for the terminal, a page with charts (``--html``).

Both show the same :class:`~zodbshootout.results.trace_analysis.Summary`:
popularity (the top 1 % and 10 % of the loaded oids' share, the zipf fit),
record sizes, the working set over time, the transactions' inter-arrival
times, and the conflict candidates; a figure the trace can't give is left
out with the reason (its ``lacks``).  The page is a report directory like
``zodbshootout report``'s (:func:`zodbshootout.render.html.write_report`).
"""

from __future__ import annotations

from typing import Any

from zodbshootout.render import html
from zodbshootout.results.trace_analysis import Spread, Summary

#: Conflict candidates listed (the most often stored first).
TOP_CONFLICTS = 10


def duration(ns: float) -> str:
    """*ns* in the unit that reads best: ns, µs, ms or s."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f} %"


def _spread_row(name: str, spread: Spread | None, show: Any = str) -> list[str]:
    if spread is None:
        return [name, "0", "-", "-", "-", "-", "-"]
    values = (spread.mean, spread.p50, spread.p90, spread.p99, spread.max)
    return [name, str(spread.count), *(show(value) for value in values)]


def _sizes(value: float) -> str:
    return f"{value:.0f}"


def popularity_lines(summary: Summary) -> list[str]:
    lines = [
        f"popularity: {summary.loads} loads of {summary.loaded_oids} oids; the top 1 % of "
        f"the oids took {_percent(summary.top1_share)} of the loads, the top 10 % "
        f"{_percent(summary.top10_share)}"
    ]
    fit = summary.zipf
    if fit is None:
        lines.append("zipf fit: too few oids loaded 5 times or more (10 needed)")
    else:
        lines.append(
            f"zipf fit: exponent {fit.exponent:.2f} (R² {fit.r_squared:.3f}, over the "
            f"{fit.oids} oids loaded 5 times or more; 1: a classic zipf, 0: uniform)"
        )
    return lines


def size_rows(summary: Summary) -> list[list[str]]:
    return [
        ["record size (bytes)", "count", "mean", "p50", "p90", "p99", "max"],
        _spread_row("loaded", summary.load_sizes, _sizes),
        _spread_row("stored", summary.store_sizes, _sizes),
    ]


def timing_lines(summary: Summary) -> list[str]:
    windows = len(summary.working_set)
    lines = []
    if windows:
        lines.append(
            f"working set: {max(summary.working_set)} oids at most in one "
            f"{duration(summary.window_ns)} window ({windows} windows), "
            f"{summary.cumulative[-1]} distinct oids in all"
        )
    spread = summary.inter_arrival
    if spread is not None:
        lines.append(
            f"inter-arrival of transactions: mean {duration(spread.mean)}, p50 "
            f"{duration(spread.p50)}, p90 {duration(spread.p90)}, p99 {duration(spread.p99)}, "
            f"max {duration(spread.max)} ({spread.count} gaps)"
        )
    return lines


def conflict_lines(summary: Summary) -> list[str]:
    if summary.conflict_oids is None:
        return []
    window = duration(summary.conflict_window_ns)
    found = summary.conflict_oids
    lines = [
        f"conflict candidates: {len(found)} oids stored by another connection within "
        f"{window} before ({summary.conflict_stores} such stores)"
    ]
    lines += [f"  oid 0x{oid:016x}: {count}" for oid, count in found[:TOP_CONFLICTS]]
    return lines


def analysis_lines(summary: Summary) -> list[str]:
    """The analysis as the terminal shows it (after trace-stats' counts)."""
    lines = [*popularity_lines(summary), "", *text_table(size_rows(summary)), ""]
    lines += timing_lines(summary)
    lines += conflict_lines(summary)
    if summary.lacks:
        lines += ["", "this trace lacks:"] + [f"  {sentence}" for sentence in summary.lacks]
    return lines


def text_table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(width) if i == 0 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


# --- the page ---------------------------------------------------------------------------


def trace_report(
    title: str, counts: list[str], summary: Summary, charts: bool = True
) -> html.Report:
    """The analyzer's page: the counts, the analysis' tables, one chart of four panels."""
    report = html.Report(title, draw=charts)
    e = html._e
    header, *rows = size_rows(summary)
    report.parts += [
        f"<h1>{e(title)}</h1>",
        html._warning(
            ["This trace lacks:", *(f"  {line}" for line in summary.lacks)] if summary.lacks else []
        ),
        "<h2>Counts</h2>",
        f'<div class="scroll"><pre>{e(chr(10).join(counts))}</pre></div>',
        "<h2>Popularity</h2>",
        html._paragraphs(popularity_lines(summary)),
        "<h2>Record sizes</h2>",
        html._table(header, rows),
        "<h2>Time</h2>",
        html._paragraphs(timing_lines(summary) or ["No accesses."]),
    ]
    conflicts = conflict_lines(summary)
    if conflicts:
        report.parts += ["<h2>Conflict candidates</h2>", html._paragraphs(conflicts[:1])]
    if conflicts[1:]:
        report.parts.append(
            html._table(
                ["oid", "stores after another connection's"],
                [line.strip().split(": ") for line in conflicts[1:]],
            )
        )
    report.parts += [
        "<h2>Charts</h2>",
        html._chart(
            report,
            "trace.svg",
            lambda: build_trace_figure(summary),
            "loads by rank, record sizes, working set over time, inter-arrival times",
        ),
    ]
    return report


def build_trace_figure(summary: Summary) -> Any:
    """Four panels: loads by rank (log-log, with the fit), sizes, working set, gaps."""
    from zodbshootout.render import plot

    plt = plot._pyplot()
    figure, axes = plt.subplots(2, 2, figsize=(10, 7), layout="constrained")
    _rank_panel(axes[0][0], summary)
    _size_panel(axes[0][1], summary)
    _working_set_panel(axes[1][0], summary)
    _gap_panel(axes[1][1], summary)
    return figure


def _rank_panel(axis: Any, summary: Summary) -> None:
    ranked = summary.rank_loads
    axis.set_title("loads per oid, by rank", fontsize=10)
    if not ranked:
        _nothing(axis, "no loads")
        return
    ranks = range(1, len(ranked) + 1)
    axis.loglog(ranks, ranked, marker=".", linestyle="", markersize=3, label="loads")
    fit = summary.zipf
    if fit is not None:
        axis.loglog(
            [1, fit.oids],
            [fit.scale, fit.scale * fit.oids**-fit.exponent],
            color="black",
            label=f"zipf {fit.exponent:.2f} (R² {fit.r_squared:.2f})",
        )
    axis.set_xlabel("rank")
    axis.set_ylabel("loads")
    axis.legend(fontsize=8)


def _size_panel(axis: Any, summary: Summary) -> None:
    axis.set_title("record sizes (p50, p90, p99, max)", fontsize=10)
    if summary.load_sizes is None and summary.store_sizes is None:
        _nothing(axis, "no loads or stores")
        return
    for offset, (name, spread) in enumerate(
        (("loaded", summary.load_sizes), ("stored", summary.store_sizes))
    ):
        if spread is None:
            continue
        values = [spread.p50, spread.p90, spread.p99, spread.max]
        axis.bar([i + 0.4 * offset for i in range(4)], values, width=0.4, label=name)
    axis.set_xticks([0.2, 1.2, 2.2, 3.2], ["p50", "p90", "p99", "max"])
    axis.set_ylabel("bytes")
    axis.legend(fontsize=8)


def _working_set_panel(axis: Any, summary: Summary) -> None:
    seconds = [i * summary.window_ns / 1e9 for i in range(len(summary.working_set))]
    axis.set_title(f"oids used per {duration(summary.window_ns)} window", fontsize=10)
    if not summary.working_set:
        _nothing(axis, "no loads or stores")
        return
    axis.step(seconds, summary.working_set, where="post", label="in the window")
    axis.step(seconds, summary.cumulative, where="post", label="so far")
    axis.set_xlabel("seconds from the start")
    axis.set_ylabel("oids")
    axis.legend(fontsize=8)


def _gap_panel(axis: Any, summary: Summary) -> None:
    axis.set_title("inter-arrival of transactions", fontsize=10)
    gaps = [gap / 1e6 for gap in summary.inter_arrival_ns]
    if not gaps:
        _nothing(axis, "not in this trace")
        return
    axis.hist(gaps, bins=50)
    axis.set_xlabel("ms between transaction starts")
    axis.set_ylabel("transactions")


def _nothing(axis: Any, why: str) -> None:
    """A panel with nothing to draw says why."""
    axis.text(0.5, 0.5, why, ha="center", transform=axis.transAxes)

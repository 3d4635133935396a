"""``zodbshootout report``: saved runs as a static web page a project can publish.

One run, two runs compared, or a history of runs becomes a directory holding
``index.html`` and its charts (SVG files beside it, drawn by
:mod:`zodbshootout.render.plot`): no server and no script, only HTML and CSS
that reflow on a phone.  The tables are the ones the text formats show
(:func:`build_table`, the comparison's and the history's rows), so a page
can't disagree with ``show``.

Every text that comes from a result file (labels, database names, notes,
metadata) is escaped: a result file is untrusted input.
"""

from __future__ import annotations

import html
import importlib.util
import io
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from zodbshootout.outputfile import (
    check_report_directory,
    mark_report_directory,
    report_files,
    write_atomically,
)
from zodbshootout.render.markdown import cell_text, insight_text
from zodbshootout.render.metadata import format_metadata, format_timestamp
from zodbshootout.render.table import build_table
from zodbshootout.results.noise import format_busy_warning
from zodbshootout.results.stats import format_spread_warning

if TYPE_CHECKING:
    from zodbshootout.results.compare import Comparison
    from zodbshootout.results.history import HistoryRow, SavedRun
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.record import RunResult

#: The chart files and pages beside index.html a report may write; a report removes
#: those it did not write this time.
CHART_FILES = (
    "run.svg",
    "rtt.svg",
    "comparison.svg",
    "history.svg",
    "mix.svg",
    "mix.html",
    "trace.svg",
)

_STYLE = """
body{font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;
 background:#fff;margin:0 auto;max-width:75rem;padding:1rem}
h1{font-size:1.5rem;margin:.2rem 0 .6rem}h2{font-size:1.2rem;margin-top:1.6rem}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.4rem 0}
caption{text-align:left;font-weight:600;padding:.2rem 0}
th,td{padding:.25rem .6rem;border-bottom:1px solid #d0d0d0;text-align:right;white-space:nowrap}
th{background:#f3f3f3}th.label,td.label{text-align:left}
tr.summary td{font-weight:600;border-top:2px solid #888}
img.chart{display:block;max-width:100%;height:auto;margin:.6rem 0;border:1px solid #e0e0e0}
.warning{border-left:4px solid #d97706;background:#fff7e6;padding:.4rem .8rem;margin:.6rem 0}
.warning p,.warning ul{margin:.2rem 0}
dl.metadata{display:grid;grid-template-columns:max-content 1fr;gap:.15rem 1rem}
dl.metadata dt{font-weight:600}dl.metadata dd{margin:0;overflow-wrap:anywhere}
.notes{font-size:.92rem;color:#333}
footer{margin-top:2rem;font-size:.85rem;color:#555}
@media (max-width:40rem){body{padding:.5rem;font-size:15px}
 dl.metadata{grid-template-columns:1fr}dl.metadata dd{margin-bottom:.4rem}}
"""


@dataclass
class Report:
    """A page: its title, its HTML fragments (already escaped), and its chart files."""

    title: str
    parts: list[str] = field(default_factory=list)
    #: File name -> SVG bytes, written beside index.html.
    charts: dict[str, bytes] = field(default_factory=dict)
    #: False: leave the charts out (they take seconds to draw).
    draw: bool = True
    #: File name -> a complete HTML page beside index.html (a mix run's charts).
    pages: dict[str, str] = field(default_factory=dict)


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _paragraphs(lines: Iterable[str], css: str = "") -> str:
    attribute = f' class="{css}"' if css else ""
    return "".join(f"<p{attribute}>{_e(line)}</p>" for line in lines)


def _warning(lines: list[str]) -> str:
    """A warning box: the first line, then the indented lines as a list."""
    if not lines:
        return ""
    head = [line for line in lines if not line.startswith("  ")]
    items = [line.strip() for line in lines if line.startswith("  ")]
    text = _paragraphs(head)
    if items:
        text += "<ul>" + "".join(f"<li>{_e(item)}</li>" for item in items) + "</ul>"
    return f'<div class="warning" role="note">{text}</div>'


def _table(
    header: list[str],
    rows: list[list[str]],
    labels: int = 1,
    caption: str = "",
    summary: list[str] | None = None,
) -> str:
    """An HTML table; the first *labels* columns are text (left), the rest numbers.

    A *summary* row (the geometric mean) comes last, set apart.
    """

    def cells(row: list[str], tag: str) -> str:
        return "".join(
            f"<{tag}{' class=label' if i < labels else ''}>{_e(text)}</{tag}>"
            for i, text in enumerate(row)
        )

    body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in rows)
    if summary:
        body += f'<tr class="summary">{cells(summary, "td")}</tr>'
    title = f"<caption>{_e(caption)}</caption>" if caption else ""
    return (
        f'<div class="scroll"><table>{title}<thead><tr>{cells(header, "th")}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _metadata(lines: list[str]) -> str:
    """``show --metadata``'s ``Name:   value`` lines as a definition list."""
    items = []
    for line in lines:
        name, _, value = line.partition(":")
        items.append(f"<dt>{_e(name.strip())}</dt><dd>{_e(value.strip())}</dd>")
    return f'<dl class="metadata">{"".join(items)}</dl>'


def _chart(report: Report, name: str, draw: Callable[[], Any], alt: str) -> str:
    """Draw a chart into *report* as *name*; without matplotlib, say how to get charts."""
    if not report.draw:
        return ""
    if importlib.util.find_spec("matplotlib") is None:
        return _paragraphs(
            ["No charts: they need matplotlib (pip install 'zodbshootout[plot]')."], "notes"
        )
    import matplotlib.pyplot as plt

    figure = draw()
    image = io.BytesIO()
    try:
        # No date: the same runs give the same file.
        figure.savefig(image, format="svg", metadata={"Date": None})
    finally:
        plt.close(figure)
    report.charts[name] = image.getvalue()
    return f'<img class="chart" src="{_e(name)}" alt="{_e(alt)}" loading="lazy">'


# --- One run ----------------------------------------------------------------------------


def run_report(result: RunResult, aggregate: str, source: str, charts: bool = True) -> Report:
    """The page of one saved run: warnings, the table, the chart and the metadata."""
    from zodbshootout.render.plot import build_figure

    name = result.metadata.get("label") or os.path.basename(source)
    report = Report(f"zodbshootout: {name}", draw=charts)
    what = "mean" if aggregate == "mean" else "best"
    plural = "s" if result.repetitions != 1 else ""
    report.parts += [
        f"<h1>{_e(report.title)}</h1>",
        _paragraphs(
            [
                f"Started {format_timestamp(result.metadata.get('started'))}. Objects per "
                f"second ({what} of {result.repetitions} repetition{plural}; ± is the "
                "relative standard deviation).",
            ]
        ),
        _warning([f"warning: {line}" for line in format_busy_warning(result.metadata)]),
        _warning(format_spread_warning(result)),
        "<h2>Table</h2>",
        _run_tables(result, aggregate),
        "<h2>Chart</h2>",
        _chart(report, "run.svg", lambda: build_figure(result, aggregate), "rates per phase"),
        *_rtt_chart(report, result, aggregate),
        "<h2>Where and how it was measured</h2>",
        _metadata(format_metadata(result)),
    ]
    return report


def _rtt_chart(report: Report, result: RunResult, aggregate: str = "mean") -> list[str]:
    """An --rtt ladder's chart (``plot``'s, render.rtt_plot): its rates against the RTT seen.

    Nothing for a run without a ladder (or with each database at one RTT only).
    """
    from zodbshootout.render.rtt_plot import build_rtt_figure, is_ladder

    if not is_ladder(result):
        return []
    what = "transactions per second and p99" if result.mix else "objects per second per phase"
    return [
        "<h2>Against the round trip</h2>",
        _paragraphs(
            [
                f"The --rtt ladder: {what} against the round trip each step measured "
                "through its proxy (databases without a network server are left out)."
            ]
        ),
        _chart(report, "rtt.svg", lambda: build_rtt_figure(result, aggregate), f"{what} by RTT"),
    ]


def _run_tables(result: RunResult, aggregate: str) -> str:
    table = build_table(result, aggregate)
    parts = []
    for block in table.blocks:
        rows = [[label, *(cell_text(c) for c in cells)] for label, cells in block.rows]
        rows += [[row.label, *(insight_text(c) for c in row.cells)] for row in block.insight]
        caption = f"Concurrency {block.concurrency}"
        parts.append(_table(["Transaction", *table.databases], rows, caption=caption))
    if table.footnotes:
        parts.append(
            '<ol class="notes">' + "".join(f"<li>{_e(t)}</li>" for t in table.footnotes) + "</ol>"
        )
    if table.notes:
        parts.append(
            '<ul class="notes">' + "".join(f"<li>Note: {_e(t)}</li>" for t in table.notes) + "</ul>"
        )
    return "".join(parts)


# --- A mix run ------------------------------------------------------------------------


def mix_report(
    run: MixRun, result: RunResult, source: str, patterns: list[str] | None = None
) -> Report:
    """The pages of a mix run: index.html with each database's table and notes, and
    mix.html with the charts ``plot`` draws (the spectrum, latency, throughput and the
    series on the run's time axis), linked from the index."""
    from zodbshootout.render.mix import failure_notes, mix_notes, operation_table

    name = result.metadata.get("label") or os.path.basename(source)
    report = Report(f"zodbshootout mix: {name}")
    charts = Report(f"zodbshootout mix: {name}: charts")
    chart = _chart(
        charts,
        "mix.svg",
        lambda: _mix_figure(run, patterns),
        "latency by percentile; latency, throughput and the sampled series over time",
    )
    report.charts.update(charts.charts)
    report.parts += [
        f"<h1>{_e(report.title)}</h1>",
        _paragraphs(
            [
                f"Started {format_timestamp(result.metadata.get('started'))}. Workload "
                f"{run.workload or 'mix'}: transactions per second and latency in "
                "milliseconds per operation (all: every operation together)."
            ]
        ),
        '<p><a href="mix.html">Charts: latency, throughput and the series on the '
        "run's time axis</a></p>",
        *(_warning([line]) for line in failure_notes(run)),
        *_rtt_chart(report, result),
    ]
    for record in run.records:
        header, *rows = operation_table(record)
        report.parts += [
            f"<h2>{_e(record.database)}</h2>",
            _table(header, rows, caption=f"{record.concurrency} workers, {record.seconds:.1f} s"),
            '<ul class="notes">'
            + "".join(f"<li>{_e(note)}</li>" for note in mix_notes(record, run))
            + "</ul>",
        ]
    report.parts += ["<h2>Where and how it was measured</h2>", _metadata(format_metadata(result))]
    charts.parts += [
        f"<h1>{_e(charts.title)}</h1>",
        '<p><a href="index.html">The tables</a></p>',
        chart,
    ]
    report.pages["mix.html"] = render_page(charts)
    return report


def _mix_figure(run: MixRun, patterns: list[str] | None) -> Any:
    from zodbshootout.render.mix_plot import build_mix_figure

    return build_mix_figure(run, patterns)


# --- Two runs ------------------------------------------------------------------------


def comparison_report(
    comparison: Comparison, results: tuple[RunResult, RunResult], warnings: list[str]
) -> Report:
    """The page of two runs: the change per cell, the verdicts, the chart, both metadata."""
    from zodbshootout.render.comparison import comparison_rows, method_lines
    from zodbshootout.render.ratio_chart import build_comparison_figure

    report = Report(f"{comparison.changed_name} against {comparison.base_name}")
    header, rows, summary = comparison_rows(comparison)
    numeric = header.index(comparison.base_name)
    table = _table(header, rows, labels=numeric, summary=summary)
    report.parts += [
        f"<h1>{_e(report.title)}</h1>",
        *(_warning([f"warning: {line}"]) for line in warnings),
        "<h2>Change per cell</h2>",
        table,
        _paragraphs(method_lines(comparison), "notes"),
        "<h2>Chart</h2>",
        _chart(
            report,
            "comparison.svg",
            lambda: build_comparison_figure(comparison),
            "change per cell",
        ),
    ]
    for name, result in zip((comparison.base_name, comparison.changed_name), results, strict=True):
        report.parts += [f"<h2>{_e(name)}: where and how</h2>", _metadata(format_metadata(result))]
    return report


# --- A history ------------------------------------------------------------------------


def history_report(runs: list[SavedRun], rows: list[HistoryRow], aggregate: str) -> Report:
    """The page of a history: a row per cell and a column per run, the chart, the runs."""
    from zodbshootout.render.history import history_legend, history_table
    from zodbshootout.render.plot import build_history_figure
    from zodbshootout.results.history import column_names

    report = Report(f"zodbshootout: history of {len(runs)} runs")
    header, table_rows, labels = history_table(runs, rows, aggregate)
    busy = [
        f"warning: {name}: {line}"
        for run, name in zip(runs, column_names(runs), strict=True)
        for line in format_busy_warning(run.result.metadata)
    ]
    report.parts += [
        f"<h1>{_e(report.title)}</h1>",
        _warning(busy),
        "<h2>Table</h2>",
        _table(header, table_rows, labels=labels),
        "<h2>Chart</h2>",
        _chart(
            report,
            "history.svg",
            lambda: build_history_figure(runs, rows, aggregate),
            "rate over the runs, per phase",
        ),
        "<h2>Runs</h2>",
        '<ol class="notes">'
        + "".join(f"<li>{_e(line.partition('. ')[2])}</li>" for line in history_legend(runs))
        + "</ol>",
    ]
    return report


# --- The page and its files ---------------------------------------------------------


def render_page(report: Report) -> str:
    """The complete HTML document of *report*."""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(report.title)}</title><style>{_STYLE}</style></head>\n"
        f"<body><main>{''.join(report.parts)}</main>"
        "<footer>Written by zodbshootout report.</footer></body></html>\n"
    )


def write_report(report: Report, directory: str) -> list[str]:
    """Write index.html and the charts into *directory*; return the files written.

    The directory is checked first (see :func:`check_report_directory`) and
    marked as a report before anything else is written into it, so that a
    report cut short can be replaced; each file is written atomically; the
    charts an earlier report wrote (its marker names them) that this one does
    not have are removed, so the directory never mixes two reports, and no
    file the tool did not write is ever removed.
    """
    check_report_directory(directory)
    if not os.path.isdir(directory):
        os.mkdir(directory)
    earlier = report_files(directory)
    names = [*report.charts, *report.pages, "index.html"]
    mark_report_directory(directory, sorted(earlier | set(names)))
    written = []
    for name, data in report.charts.items():
        write_atomically(os.path.join(directory, name), data)
        written.append(os.path.join(directory, name))
    for name, page in report.pages.items():
        write_atomically(os.path.join(directory, name), page)
        written.append(os.path.join(directory, name))
    index = os.path.join(directory, "index.html")
    write_atomically(index, render_page(report))
    for name in CHART_FILES:
        stale = os.path.join(directory, name)
        ours = name in earlier and name not in report.charts and name not in report.pages
        if ours and os.path.isfile(stale) and not os.path.islink(stale):
            os.unlink(stale)
    mark_report_directory(directory, names)
    return [index, *written]

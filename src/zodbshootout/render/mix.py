"""The table of a mix run: per database, one row per operation with throughput and latency.

Pure functions from a mix run's typed records to lines (see zodbshootout.results.mix_stats).
"""

from __future__ import annotations

import math

from zodbshootout.render.skew import SKEW_SHARE
from zodbshootout.results.mix import MixRecord, MixRun
from zodbshootout.results.mix_compare import MetricComparison
from zodbshootout.results.mix_stats import (
    PERCENTILES,
    OperationSummary,
    hit_rate,
    integrity,
    summarize,
    total_summary,
)


def _number(value: float | None, digits: int = 2) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.{digits}f}"


def _by_class(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items()) or "-"


def _percentile_label(p: float) -> str:
    return f"p{p:g}"


def format_mix_database(record: MixRecord, run: MixRun) -> list[str]:
    """The block of one database: a heading, the table, the errors by class."""
    rows = summarize(record)
    open_loop = record.open_loop
    header = ["operation", "tx/s"] + [f"{_percentile_label(p)} ms" for p in PERCENTILES]
    header += ["max ms"]
    if open_loop:
        header += ["svc p50", "svc p99", "lag avg", "lag max"]
    header += ["conflicts", "retries", "failures"]
    table = [header] + [_row(row, open_loop) for row in rows]
    lines = [f"{record.database}: {describe_record(record, run)}", *_align(table)]
    lines.extend(f"  {note}" for note in record_notes(record))
    return lines


def describe_record(record: MixRecord, run: MixRun) -> str:
    """What was run on one database: workload, workers, seconds, --rate, client cache hits."""
    text = (
        f"{record.workload or run.workload or '?'}, "
        f"{record.concurrency} workers, {record.seconds:.1f} s"
    )
    if record.rate_per_second is not None:
        text += f", --rate {record.rate_per_second:g}/s ({run.arrival})"
    rate = hit_rate(record)
    if rate is not None:
        loads = record.counters["loads"]
        text += f"; client cache hit rate {rate:.0%} of {loads} loads"
    return text


def record_notes(record: MixRecord) -> list[str]:
    """What one database's table says below its rows, one sentence each: the errors of each
    operation by class, then what the check after the run found, then the unstarted."""
    notes = []
    for row in summarize(record):
        if row.operation != "all" and (row.conflicts or row.failures):
            parts = [f"conflicts {_by_class(row.conflicts)}"] if row.conflicts else []
            if row.failures:
                parts.append(f"failures {_by_class(row.failures)}")
            notes.append(f"{row.operation}: {'; '.join(parts)}")
    if record.uncertain_increments:
        notes.append(
            f"{record.uncertain_increments} object changes were in commits that failed "
            "with an error other than a conflict: the storage may have committed them anyway"
        )
    notes.extend(_integrity_notes(record))
    if record.unstarted:
        notes.append(
            f"{record.unstarted} scheduled transactions never started before the end "
            "(the database fell behind --rate)"
        )
    return notes


def mix_notes(record: MixRecord, run: MixRun) -> list[str]:
    """Every note of one database's block: :func:`record_notes`, then where the workers ran."""
    return record_notes(record) + host_notes(record, run)


def host_notes(record: MixRecord, run: MixRun) -> list[str]:
    """With --hosts: how many workers ran on each host, and a skew too large to ignore."""
    counts = run.hosts_of(record.database)
    if not counts:
        return []
    lines = ["workers on hosts: " + ", ".join(f"{host} {n}" for host, n in counts.items())]
    skews = run.skews.get(record.database, ())
    seconds = record.seconds or 0
    if skews and seconds > 0 and max(skews) > SKEW_SHARE * seconds:
        lines.append(
            f"the workers on the hosts started measuring {max(skews) * 1000:.0f} ms apart, "
            f"more than {SKEW_SHARE:.0%} of the duration: raise --duration"
        )
    return lines


def _integrity_notes(record: MixRecord) -> list[str]:
    found = integrity(record)
    lines = []
    if found is not None and found.stray:
        lines.append(
            f"{found.stray} object changes in the database were made by transactions "
            "that failed: the storage committed them after all"
        )
    if found is not None and found.lost:
        lines.append(f"{found.lost} committed object changes are missing from the database")
    return lines


def _row(row: OperationSummary, open_loop: bool) -> list[str]:
    cells = [row.operation, _number(row.per_second, 1)]
    cells += [_number(row.percentiles_ms[p]) for p in PERCENTILES]
    cells += [_number(row.max_ms)]
    if open_loop and row.service_ms is not None:
        cells += [_number(row.service_ms[50.0]), _number(row.service_ms[99.0])]
        cells += [_number(row.lag_mean_ms), _number(row.lag_max_ms)]
    cells += [str(sum(row.conflicts.values())), str(row.retries), str(sum(row.failures.values()))]
    return cells


def _align(table: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines = []
    for row in table:
        first = row[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)]
        lines.append("  " + "  ".join([first, *rest]))
    return lines


def format_mix(run: MixRun) -> list[str]:
    """Every database's block, then the failures."""
    lines: list[str] = []
    for record in run.records:
        if lines:
            lines.append("")
        lines.extend(format_mix_database(record, run))
        lines.extend(f"  {note}" for note in host_notes(record, run))
    for failure in run.failures:
        if lines:
            lines.append("")
        lines.append(f"{failure.database}: not measured: {failure.reason}")
    return lines


def p_text(row: MetricComparison) -> str:
    """Holm's p of *row* with ``*`` when significant; ``-`` untested.

    A p that underflowed to 0 is shown as below the smallest a double
    prints, not as a p of exactly 0.
    """
    if row.p_adjusted is None:
        return "-"
    shown = f"{row.p_adjusted:.3g}" if row.p_adjusted > 0 else "<1e-300"
    return shown + (" *" if row.significant else "")


def format_mix_comparison(
    rows: list[MetricComparison], base_name: str, changed_name: str
) -> list[str]:
    """One line per database, operation and metric: both values, the change, p if tested."""
    table = [["database", "operation", "metric", base_name, changed_name, "change", "p (Holm)"]]
    for row in rows:
        change = "-" if math.isnan(row.ratio) else f"{row.ratio - 1:+.1%}"
        digits = 1 if row.metric == "tx/s" else 2
        table.append(
            [
                row.database,
                row.operation,
                row.metric if row.metric == "tx/s" else f"{row.metric} ms",
                _number(row.base, digits),
                _number(row.changed, digits),
                change,
                p_text(row),
            ]
        )
    lines = _align_left(table, left=3)
    lines.append(
        "tx/s and p99 of each database are tested over the runs' intervals (Welch, "
        "Holm-corrected); * marks p < 0.05"
    )
    return lines


def _align_left(table: list[list[str]], left: int) -> list[str]:
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return [
        "  ".join(
            cell.ljust(width) if i < left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]


def format_mix_history(runs: list[tuple[str, MixRun]]) -> list[str]:
    """Saved mix runs side by side, oldest first: per database, tx/s and latency of all operations.

    *runs* are (column name, run).  A run that did not measure a database shows ``-``.
    """
    databases = list(dict.fromkeys(r.database for _name, run in runs for r in run.records))
    metrics = ("tx/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms")
    table = [["database", "metric", *(name for name, _run in runs)]]
    for database in databases:
        summaries = []
        for _name, run in runs:
            record = run.record(database)
            summaries.append(total_summary(record) if record is not None else None)
        for metric in metrics:
            cells = [database, metric]
            for summary in summaries:
                cells.append(_history_value(summary, metric))
            table.append(cells)
    lines = _align_left(table, left=2)
    lines.append("every operation together; - where a run did not measure the database")
    return lines


def _history_value(summary: OperationSummary | None, metric: str) -> str:
    if summary is None:
        return "-"
    if metric == "tx/s":
        return _number(summary.per_second, 1)
    if metric == "max ms":
        return _number(summary.max_ms)
    return _number(summary.percentiles_ms[float(metric[1:].split()[0])])

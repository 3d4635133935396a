"""What a mix run's tables show, in every format: per database a row per operation, its notes.

The figures of each operation's row (transactions per second, latency
percentiles in milliseconds, errors), the line that says what ran, the
notes under a database's table, and the JSON document; and, for mix runs
side by side (history), a row per database and figure.  The formats lay
them out (:mod:`zodbshootout.render.formats`).  Pure functions of the typed
records of :mod:`zodbshootout.results.mix`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from zodbshootout.render.rtt import ladder_notes, mix_fit_notes
from zodbshootout.render.skew import SKEW_SHARE
from zodbshootout.results import drift, steady, warmup
from zodbshootout.results.mix import MixRecord, MixRun
from zodbshootout.results.mix_fairness import (
    fairness,
    fairness_line,
    host_line,
    starved_warnings,
)
from zodbshootout.results.mix_stats import (
    PERCENTILES,
    OperationSummary,
    hit_rate,
    integrity,
    summarize,
    total_summary,
)
from zodbshootout.results.work import WORK_COUNTS, mix_work

#: Version of the JSON documents' layout.  History: 1 (zodbshootout 1.0): first version;
#: 2: each database of a run has "fairness" (per worker and host; null with one worker or
#: a run saved before it was kept), and a comparison has rows of the metric "jain_index".
MIX_TABLE_FORMAT_VERSION = 2

#: The units of every JSON document of mix runs.
UNITS = {"tx_per_second": "transactions per second", "latency": "milliseconds"}

#: Service time and schedule lag columns, only in an open-loop (--rate) run.
_OPEN_LOOP = ("service_p50_ms", "service_p99_ms", "lag_mean_ms", "lag_max_ms")


def number_text(value: float | None, digits: int = 2) -> str:
    """*value* with *digits* decimals, or ``-`` where there is none (NaN)."""
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.{digits}f}"


def finite(value: float | None, digits: int | None = 3) -> float | None:
    """*value* rounded to *digits* (None: as is), or None where there is none (NaN)."""
    if value is None or not math.isfinite(value):
        return None
    return value if digits is None else round(value, digits)


def figure_text(value: Any, digits: int) -> str:
    """A figure of :func:`operation_figures` as text: ``-`` where there is none."""
    if value is None:
        return "-"
    return str(value) if isinstance(value, int) else f"{value:.{digits}f}"


def percentile_column(percentile: float) -> str:
    """``p99_ms``, ``p99.9_ms``: the name of a latency percentile's column and key."""
    return f"p{percentile:g}_ms"


def figure_names(open_loop: bool) -> list[str]:
    """The figures of every operation's row, in column order."""
    names = ["transactions", "tx_per_second", *(percentile_column(p) for p in PERCENTILES)]
    names.append("max_ms")
    if open_loop:
        names.extend(_OPEN_LOOP)
    return [*names, "conflicts", "retries", "failures"]


#: Each figure's column title, as the aligned table names it.
FIGURE_LABELS = {
    "tx_per_second": "tx/s",
    **{percentile_column(p): f"p{p:g} ms" for p in PERCENTILES},
    "max_ms": "max ms",
    "service_p50_ms": "svc p50",
    "service_p99_ms": "svc p99",
    "lag_mean_ms": "lag avg",
    "lag_max_ms": "lag max",
    "conflicts": "conflicts",
    "retries": "retries",
    "failures": "failures",
}


def operation_figures(row: OperationSummary, open_loop: bool) -> dict[str, Any]:
    """One operation's figures by :func:`figure_names`: None where it ran no transaction."""
    figures: dict[str, Any] = {
        "transactions": row.transactions,
        "tx_per_second": finite(row.per_second),
    }
    figures.update((percentile_column(p), finite(row.percentiles_ms[p])) for p in PERCENTILES)
    figures["max_ms"] = finite(row.max_ms)
    if open_loop:
        service = row.service_ms or {}
        figures["service_p50_ms"] = finite(service.get(50.0))
        figures["service_p99_ms"] = finite(service.get(99.0))
        figures["lag_mean_ms"] = finite(row.lag_mean_ms)
        figures["lag_max_ms"] = finite(row.lag_max_ms)
    figures["conflicts"] = sum(row.conflicts.values())
    figures["retries"] = row.retries
    figures["failures"] = sum(row.failures.values())
    return figures


def operation_table(record: MixRecord) -> list[list[str]]:
    """The aligned table of one database: a header, then a row per operation (and ``all``)."""
    open_loop = record.open_loop
    header = ["operation", "tx/s"] + [f"p{p:g} ms" for p in PERCENTILES] + ["max ms"]
    if open_loop:
        header += ["svc p50", "svc p99", "lag avg", "lag max"]
    header += ["conflicts", "retries", "failures"]
    return [header] + [_operation_cells(row, open_loop) for row in summarize(record)]


def _operation_cells(row: OperationSummary, open_loop: bool) -> list[str]:
    cells = [row.operation, number_text(row.per_second, 1)]
    cells += [number_text(row.percentiles_ms[p]) for p in PERCENTILES]
    cells += [number_text(row.max_ms)]
    if open_loop and row.service_ms is not None:
        cells += [number_text(row.service_ms[50.0]), number_text(row.service_ms[99.0])]
        cells += [number_text(row.lag_mean_ms), number_text(row.lag_max_ms)]
    cells += [str(sum(row.conflicts.values())), str(row.retries), str(sum(row.failures.values()))]
    return cells


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
        text += f"; client cache hit rate {rate:.0%} of {record.counters['loads']} loads"
    return text


def _by_class(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {count}" for name, count in counts.items()) or "-"


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
    if record.work_error:
        notes.append(f"--work: the counting pass failed: {record.work_error}")
    if record.work_increments:
        notes.append(
            f"--work's counting pass committed {record.work_increments} object changes "
            "(counted in the check after the run)"
        )
    notes.extend(_integrity_notes(record))
    if record.unstarted:
        notes.append(
            f"{record.unstarted} scheduled transactions never started before the end "
            "(the database fell behind --rate)"
        )
    return notes


def mix_notes(record: MixRecord, run: MixRun) -> list[str]:
    """Every note of one database's block: :func:`record_notes`, where the workers ran,
    then how fairly the commits fell on them (:func:`fairness_notes`), then which
    series were sampled and which could not be, then the --rtt ladder's lines."""
    return (
        soak_notes(record)
        + record_notes(record)
        + host_notes(record, run)
        + fairness_notes(record)
        + series_notes(record)
        + _rtt_notes(record, run)
    )


def soak_notes(record: MixRecord) -> list[str]:
    """A checkpoint's warning, the drift verdict, the --restart-clients verdict (results.drift)."""
    notes = []
    if record.partial:
        notes.append(
            f"partial: a checkpoint saved while the run went on ({len(record.intervals)} "
            "intervals); its end, if it came, replaces it; every operation together as 'all'"
        )
    if record.drift is not None:
        sentence = drift.describe(dict(record.drift), record.seconds)
        if sentence:
            notes.append(sentence)
    if record.restart is not None:
        sentence = drift.describe_restart(dict(record.restart))
        if sentence:
            notes.append(sentence)
    if record.steady is not None:
        sentence = steady.describe(dict(record.steady))
        if sentence:
            notes.append(sentence)
    notes += [warmup.describe(dict(curve)) for curve in record.warmup]
    return notes


def warmup_blocks(run: MixRun) -> list[list[str]]:
    """The databases' warm-up curves side by side: one table per start (results.warmup)."""
    found = [
        (record.database, [dict(curve) for curve in record.warmup])
        for record in run.records
        if record.warmup
    ]
    if len(found) < 2:
        return []
    blocks = []
    for stage, title in ((0, "the start"), (1, "the restart (new processes)")):
        lines = warmup.side_by_side(found, stage)
        if lines:
            blocks.append(
                [f"warm-up from {title}, side by side: client cache hit rate and p99", *lines]
            )
    return blocks


def _rtt_notes(record: MixRecord, run: MixRun) -> list[str]:
    """With --rtt, under a database's last step: the RTTs seen and each operation's fit."""
    fits = mix_fit_notes({"rtt": run.rtt}, record.database)
    rows = run.rtt.get("rows") or {}
    mine = rows.get(record.database)
    if mine is None or [n for n, r in rows.items() if r["database"] == mine["database"]][-1] != (
        record.database
    ):
        return fits
    only = {"rtt": {"rows": {n: r for n, r in rows.items() if r["database"] == mine["database"]}}}
    return ladder_notes(only) + fits


def fairness_notes(record: MixRecord) -> list[str]:
    """With two workers or more: the fairness line, a line per host (--hosts), the starved."""
    found = fairness(record)
    if found is None:
        return []
    lines = [fairness_line(found)]
    lines += [host_line(host, len(found.workers)) for host in found.hosts]
    return lines + [f"warning: {warning}" for warning in starved_warnings(record)]


#: The columns of the per-worker table (--per-worker).
WORKER_HEADER = ["worker", "host", "tx/s", "p99 ms", "transactions", "share"]


def worker_table(record: MixRecord) -> list[list[str]]:
    """--per-worker: a header, then a row per worker; empty with fewer than two workers.

    The numbers are right-aligned from the column after ``host`` (or ``worker``)."""
    found = fairness(record)
    if found is None:
        return []
    hosts = bool(found.hosts)  # the host column only with --hosts
    rows = [[name for name in WORKER_HEADER if hosts or name != "host"]]
    for worker in found.workers:
        where = [worker.host or "-"] if hosts else []
        rows.append(
            [
                worker.name.removeprefix("worker "),
                *where,
                number_text(worker.per_second, 1),
                number_text(worker.p99_ms),
                str(worker.transactions),
                f"{worker.share:.1%}",
            ]
        )
    return rows


#: --work: the counts the table shows per transaction, with their column titles
#: (every count is in the JSON document; their meanings in results.work.WORK_COUNTS).
WORK_COLUMNS = {
    "loads": "loads",
    "server_loads": "server loads",
    "round_trips": "round trips",
    "stores": "stores",
    "bytes_read": "bytes read",
    "bytes_written": "bytes written",
    "polls": "polls",
}


def work_title(record: MixRecord) -> str | None:
    """What the --work table counted, or None without a counting pass."""
    if not record.work:
        return None
    return (
        f"work per transaction (--work: untimed, {record.work.get('transactions')} "
        "transactions of each operation, each run cold: its objects from the server, "
        "the tree above them in memory; then hot: again at once)"
    )


def work_table(record: MixRecord) -> list[list[str]]:
    """--work: a header, then a row per operation and cache state; empty without it.

    ``-`` where a count could not be taken for the storage (or nothing committed).
    """
    counted = mix_work(record.work)
    if not counted:
        return []
    rows = [["operation", "cache", *WORK_COLUMNS.values()]]
    for operation, states in counted.items():
        for state, cell in states.items():
            values = [cell.per_transaction(name) for name in WORK_COLUMNS]
            rows.append([operation, state, *(_count_text(value) for value in values)])
    return rows


def _count_text(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def work_document(record: MixRecord) -> dict[str, Any] | None:
    """--work as JSON-compatible data: per operation and state, totals and means per
    transaction; None without a counting pass."""
    counted = mix_work(record.work)
    if not counted:
        return None
    return {
        "transactions_per_operation": record.work.get("transactions") if record.work else None,
        "operations": {
            operation: {
                state: {
                    "transactions": cell.transactions,
                    "totals": dict(cell.totals),
                    "per_transaction": {
                        name: finite(cell.per_transaction(name), 6) for name in WORK_COUNTS
                    },
                }
                for state, cell in states.items()
            }
            for operation, states in counted.items()
        },
    }


def fairness_document(record: MixRecord) -> dict[str, Any] | None:
    """The record's fairness as JSON-compatible data; None with fewer than two workers."""
    found = fairness(record)
    if found is None:
        return None

    def share(entry: Any) -> dict[str, Any]:
        return {
            "name": entry.name,
            "host": entry.host,
            "workers": entry.workers,
            "transactions": entry.transactions,
            "tx_per_second": finite(entry.per_second),
            "p99_ms": finite(entry.p99_ms),
            "share": finite(entry.share, 6),
        }

    return {
        "jain_index": finite(found.jain, 6),
        "min_share": finite(found.min_share, 6),
        "max_share": finite(found.max_share, 6),
        "workers": [share(worker) for worker in found.workers],
        "hosts": [share(host) for host in found.hosts],
        "starved": [worker.name for worker in found.starved],
    }


def series_notes(record: MixRecord) -> list[str]:
    """One line naming the series sampled (they are in the result file), then why any
    sampler read nothing."""
    if not record.series:
        return list(record.series_notes)
    clients: set[str] = set()
    client_names: set[str] = set()
    servers: dict[str, int] = {}
    for name in record.series:
        if name.startswith("client."):
            _client, worker, series = name.split(".", 2)
            clients.add(worker)
            client_names.add(series)
        else:
            source = name.rsplit(".", 1)[0].split(".")[0]
            servers[source] = servers.get(source, 0) + 1
    parts = []
    if clients:
        workers = "worker" if len(clients) == 1 else "workers"
        parts.append(f"client of {len(clients)} {workers} ({len(client_names)} each)")
    parts.extend(f"{source} ({count})" for source, count in servers.items())
    every = f" every {record.interval_length_seconds:g} s" if record.interval_seconds else ""
    line = f"series sampled{every}: {', '.join(parts)}; in the result file"
    return [line, *record.series_notes]


def series_document(record: MixRecord) -> dict[str, Any]:
    """The series as the JSON format gives them: unit, t (s from the start), values."""
    return {
        name: {"unit": series.unit, "t": list(series.t), "values": list(series.values)}
        for name, series in record.series.items()
    }


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


def failure_notes(run: MixRun) -> list[str]:
    """A line per database that failed, and why: not measured, or failed after it was."""
    measured = {record.database for record in run.records}
    return [
        f"{failure.database}: {'failed' if failure.database in measured else 'not measured'}: "
        f"{failure.reason}"
        for failure in run.failures
    ]


def mix_document(run: MixRun) -> dict[str, Any]:
    """The run's figures as JSON-compatible data (no NaN, no infinity)."""
    open_loop = run.open_loop
    databases = []
    for record in run.records:
        operations = [
            {
                "operation": row.operation,
                **operation_figures(row, open_loop),
                "conflicts_by_class": dict(row.conflicts),
                "failures_by_class": dict(row.failures),
            }
            for row in summarize(record)
        ]
        databases.append(
            {
                "database": record.database,
                "workload": record.workload or run.workload,
                "workers": record.concurrency,
                "seconds": finite(record.seconds),
                "rate_per_second": record.rate_per_second,
                "arrival": run.arrival if open_loop else None,
                "client_cache_hit_rate": finite(hit_rate(record), 6),
                "client_cache_loads": record.counters.get("loads"),
                "operations": operations,
                "fairness": fairness_document(record),
                **({"work": work_document(record)} if record.work else {}),
                "notes": mix_notes(record, run),
                # Only where sampled: older runs' documents stay as they were.
                **({"series": series_document(record)} if record.series else {}),
                **({"drift": dict(record.drift)} if record.drift is not None else {}),
                **({"restart": dict(record.restart)} if record.restart is not None else {}),
                **({"partial": True} if record.partial else {}),
            }
        )
    return {
        "format": "zodbshootout-mix-table",
        "version": MIX_TABLE_FORMAT_VERSION,
        "units": UNITS,
        "seed": run.seed,
        "databases": databases,
        "not_measured": [
            {"database": failure.database, "reason": failure.reason} for failure in run.failures
        ],
        "interrupted": run.interrupted,
    }


# --- Saved runs side by side (history) ----------------------------------------------------

#: The figures history lines up: every operation of a database together.
HISTORY_FIGURES = ("tx_per_second", "p50_ms", "p99_ms", "p99.9_ms", "max_ms")

#: What the history says under its table.
HISTORY_NOTE = "every operation together; - where a run did not measure the database"


def history_rows(runs: Sequence[tuple[str, MixRun]]) -> list[tuple[str, str, list[Any]]]:
    """(database, figure, value per run: None where the run did not measure it)."""
    databases = list(dict.fromkeys(r.database for _name, run in runs for r in run.records))
    rows = []
    for database in databases:
        figures = []
        for _name, run in runs:
            record = run.record(database)
            figures.append(
                None if record is None else operation_figures(total_summary(record), False)
            )
        for name in HISTORY_FIGURES:
            rows.append((database, name, [None if f is None else f[name] for f in figures]))
    return rows


def history_table(runs: Sequence[tuple[str, MixRun]]) -> list[list[str]]:
    """The aligned history: a header, then per database a row per figure, a column per run."""
    databases = list(dict.fromkeys(r.database for _name, run in runs for r in run.records))
    table = [["database", "metric", *(name for name, _run in runs)]]
    for database in databases:
        summaries = []
        for _name, run in runs:
            record = run.record(database)
            summaries.append(total_summary(record) if record is not None else None)
        for figure in HISTORY_FIGURES:
            label = FIGURE_LABELS[figure]
            table.append([database, label, *(_history_cell(s, label) for s in summaries)])
    return table


def _history_cell(summary: OperationSummary | None, metric: str) -> str:
    if summary is None:
        return "-"
    if metric == "tx/s":
        return number_text(summary.per_second, 1)
    if metric == "max ms":
        return number_text(summary.max_ms)
    return number_text(summary.percentiles_ms[float(metric[1:].split()[0])])


def history_document(runs: Sequence[tuple[str, MixRun]]) -> dict[str, Any]:
    """Mix runs side by side as JSON-compatible data."""
    return {
        "format": "zodbshootout-mix-history",
        "version": MIX_TABLE_FORMAT_VERSION,
        "units": UNITS,
        "runs": [name for name, _run in runs],
        "rows": [
            {"database": database, "metric": figure, "values": values}
            for database, figure, values in history_rows(runs)
        ],
    }

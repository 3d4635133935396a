"""What a maintain run shows, in every format: a row per database, size and operation.

Each row: the wall time, the peak resident memory of the process that did
the work (and of the embedded ZEO server meanwhile), the storage's bytes and
object count before and after.  An operation that could not be measured has
a footnote with the reason instead of a time.  Under the table, for each
database and operation measured at three sizes or more, the fitted exponent
of ``time ∝ N^k`` with its 95 % interval.  The formats lay these out
(:mod:`zodbshootout.render.formats`).
"""

from __future__ import annotations

from typing import Any

from zodbshootout.results.maintenance import Fit, MaintenanceRun, OperationRecord

HEADER = (
    "database", "operation", "objects", "seconds", "peak RSS MB", "server peak MB",
    "MB before", "MB after", "objects before", "objects after", "removed",
)  # fmt: skip
#: The plain (csv, json) names of the same columns.
KEYS = (
    "database", "operation", "objects", "seconds", "peak_rss_bytes", "server_peak_rss_bytes",
    "bytes_before", "bytes_after", "objects_before", "objects_after", "objects_removed",
)  # fmt: skip


def plain_rows(run: MaintenanceRun) -> list[list[Any]]:
    """The rows as plain values (None where unknown)."""
    return [[_value(record, key) for key in KEYS] for record in run.records]


def _value(record: OperationRecord, key: str) -> Any:
    return getattr(record, key)


def text_rows(run: MaintenanceRun) -> tuple[list[list[str]], list[str]]:
    """The header and rows as text, and the footnotes (reasons, fits, notes)."""
    rows: list[list[str]] = [list(HEADER)]
    notes: list[str] = []
    for record in run.records:
        seconds = "" if record.seconds is None else f"{record.seconds:.3f}"
        if record.reason is not None:
            notes.append(f"[{len(notes) + 1}] {record.database} {record.operation}: "
                         f"{record.reason}")  # fmt: skip
            seconds = f"{seconds} [{len(notes)}]".strip()
        rows.append([
            record.database, record.operation, _count(record.objects), seconds,
            _megabytes(record.peak_rss_bytes), _megabytes(record.server_peak_rss_bytes),
            _megabytes(record.bytes_before), _megabytes(record.bytes_after),
            _count(record.objects_before), _count(record.objects_after),
            _count(record.objects_removed),
        ])  # fmt: skip
    notes += [load_line(record) for record in run.records if record.load]
    notes += [gc_line(record) for record in run.records if record.gc_deleted is not None]
    notes += [
        f"{record.database} {record.operation}{_at(record)}: {record.cache_objects:,} objects in "
        f"the client cache once open" + (
            f" ({record.cache_warmed:,} loaded into its persistent cache first)"
            if record.cache_warmed is not None else ""
        )
        for record in run.records
        if record.cache_objects is not None and record.cache_objects_noted
    ]  # fmt: skip
    notes += [fit_line(fit) for fit in run.fits]
    notes += [f"{database}: failed: {reason}" for database, reason in run.failures]
    notes += run.notes
    return rows, notes


def _at(record: OperationRecord) -> str:
    return f" at {record.objects:,} objects" if record.objects else ""


def gc_line(record: OperationRecord) -> str:
    """What zc.zodbdgc found, and the packs without GC around it (untimed in the row)."""
    packs = record.gc_pack_seconds or []
    around = ""
    if len(packs) == 2:
        around = f"; the packs without GC before and after it: {packs[0]:.2f} s, {packs[1]:.2f} s"
    return (
        f"{record.database} gc{_at(record)}: zc.zodbdgc found {record.gc_deleted:,} objects "
        f"unreachable and deleted them{around}"
    )


def load_line(record: OperationRecord) -> str:
    """The foreground's throughput and p99 before, during and after a pack under load."""
    load = record.load or {}
    parts = []
    for phase in ("before", "during", "after"):
        found = load.get(phase) or {}
        rate, p99 = found.get("transactions_per_second"), found.get("p99_ms")
        if rate is None:
            parts.append(f"{phase}: no whole interval")
            continue
        p99_text = "" if p99 is None else f", p99 {p99:.1f} ms"
        parts.append(f"{phase} {rate:,.0f} tx/s{p99_text} ({found.get('intervals')} s)")
    alone = load.get("alone_seconds")
    versus = ""
    if alone and record.seconds:
        versus = f"; the pack {record.seconds:.2f} s against {alone:.2f} s alone"
    return (
        f"{record.database} {record.operation}{_at(record)}: foreground {load.get('workload')}: "
        f"{'; '.join(parts)}{versus} (p99: the worst interval's)"
    )


def fit_line(fit: Fit) -> str:
    sizes = f"N = {fit.sizes[0]:,} … {fit.sizes[-1]:,} ({len(fit.sizes)} sizes)"
    return (
        f"{fit.database} {fit.operation}: time ∝ N^k, k = {fit.exponent:.2f} "
        f"(95 % interval {fit.low:.2f} … {fit.high:.2f}), {sizes}"
    )


def document(run: MaintenanceRun) -> dict[str, Any]:
    """The JSON format's document."""
    return {
        "operations": [dict(zip(KEYS, row, strict=True)) for row in plain_rows(run)],
        "reasons": [
            {
                "database": r.database,
                "operation": r.operation,
                "objects": r.objects,
                "reason": r.reason,
            }
            for r in run.records
            if r.reason is not None
        ],
        "fits": [
            {
                "database": f.database,
                "operation": f.operation,
                "sizes": list(f.sizes),
                "exponent": f.exponent,
                "low": f.low,
                "high": f.high,
            }
            for f in run.fits
        ],
        "under_load": [
            {"database": r.database, "operation": r.operation, "objects": r.objects, **r.load}
            for r in run.records
            if r.load
        ],
        "notes": run.notes,
    }


def _megabytes(value: int | None) -> str:
    return "" if value is None else f"{value / 1e6:,.1f}"


def _count(value: int | None) -> str:
    return "" if value is None else f"{value:,}"

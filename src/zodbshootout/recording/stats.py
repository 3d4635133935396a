"""What ``trace-stats`` counts in traces: operations, work per transaction, sizes.

Pure: :func:`trace_stats` reads opened traces, :func:`format_stats` returns
lines; only the command line prints them.  Sizes are counted in power-of-two
classes, so that a trace of any length is summed in bounded memory.

A *transaction* here is what one connection did between two invalidation
polls (ZODB polls when a transaction begins), or, on the storage itself,
from one ``tpc_begin`` on; one with neither a load, a store nor a commit is
not counted (ZODB polls more than once around a transaction's boundary).
"""

from __future__ import annotations

import collections
import datetime
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from zodbshootout.recording.format import FLAG_ERROR, FLAG_NONE, Op, Record
from zodbshootout.recording.reader import Trace

LOADS = frozenset({Op.LOAD, Op.LOAD_BEFORE, Op.LOAD_SERIAL})
STORES = frozenset({Op.STORE, Op.STORE_BLOB})


def size_class(size: int) -> int:
    """The power of two a size is counted under: the smallest 2**k >= size (0 for 0)."""
    return 1 << (size - 1).bit_length() if size > 0 else 0


@dataclass
class _Open:
    """A connection's transaction being counted."""

    number: int
    loads: int = 0
    stores: int = 0
    committed: bool = False
    aborted: bool = False


@dataclass
class TraceStats:
    files: int = 0
    processes: set[int] = field(default_factory=set)
    records: int = 0
    partial_tail_bytes: int = 0
    first_wall_ns: int | None = None
    last_wall_ns: int | None = None
    calls: collections.Counter[Op] = field(default_factory=collections.Counter)
    errors: collections.Counter[Op] = field(default_factory=collections.Counter)
    invalidated_oids: int = 0
    invalidate_all: int = 0
    #: Transactions by how many loads / stores they did.
    loads_per_transaction: collections.Counter[int] = field(default_factory=collections.Counter)
    stores_per_transaction: collections.Counter[int] = field(default_factory=collections.Counter)
    committed: int = 0
    aborted: int = 0
    #: Size class -> (count, bytes) of the records loaded / stored.
    load_sizes: dict[int, list[int]] = field(default_factory=dict)
    store_sizes: dict[int, list[int]] = field(default_factory=dict)
    classes: collections.Counter[str] = field(default_factory=collections.Counter)

    @property
    def transactions(self) -> int:
        return sum(self.loads_per_transaction.values())

    @property
    def seconds(self) -> float:
        if self.first_wall_ns is None or self.last_wall_ns is None:
            return 0.0
        return (self.last_wall_ns - self.first_wall_ns) / 1e9

    def _close(self, current: _Open) -> None:
        if current.loads or current.stores or current.committed or current.aborted:
            self.loads_per_transaction[current.loads] += 1
            self.stores_per_transaction[current.stores] += 1
            self.committed += current.committed
            self.aborted += current.aborted


def _add_size(sizes: dict[int, list[int]], size: int) -> None:
    entry = sizes.get(size_class(size))
    if entry is None:
        sizes[size_class(size)] = [1, size]
    else:
        entry[0] += 1
        entry[1] += size


def trace_stats(
    traces: Iterable[Trace], observe: Callable[[Trace, Record], None] | None = None
) -> TraceStats:
    """Every record of *traces* counted (a process's files in their order, by sequence);
    *observe*, if given, sees each record too (the analyzer's feed)."""
    stats = TraceStats()
    ordered = sorted(traces, key=lambda t: (t.header.pid, t.header.sequence))
    open_by_connection: dict[tuple[int, int], _Open] = {}
    for trace in ordered:
        stats.files += 1
        stats.processes.add(trace.header.pid)
        for record in trace.records():
            _count(stats, trace, record, open_by_connection)
            if observe is not None:
                observe(trace, record)
        stats.partial_tail_bytes += trace.partial_tail_bytes
    for current in open_by_connection.values():
        stats._close(current)
    return stats


def _count(
    stats: TraceStats,
    trace: Trace,
    record: Record,
    open_by_connection: dict[tuple[int, int], _Open],
) -> None:
    stats.records += 1
    wall = trace.header.base_wall_ns + record.time_ns
    if stats.first_wall_ns is None or wall < stats.first_wall_ns:
        stats.first_wall_ns = wall
    if stats.last_wall_ns is None or wall > stats.last_wall_ns:
        stats.last_wall_ns = wall
    if record.op is Op.CLASS:
        stats.classes[trace.class_names[record.size]] += 1
    elif record.flags & FLAG_ERROR:
        stats.errors[record.op] += 1
    else:
        stats.calls[record.op] += 1
        key = (trace.header.pid, record.connection)
        current = open_by_connection.get(key)
        starts = record.op is Op.NEW_INSTANCE or record.op is Op.BEFORE_INSTANCE
        if current is None or current.number != record.transaction or starts:
            if current is not None:
                stats._close(current)
            current = open_by_connection[key] = _Open(record.transaction)
        _count_work(stats, current, record)


def _count_work(stats: TraceStats, current: _Open, record: Record) -> None:
    op = record.op
    if op in LOADS:
        current.loads += 1
        _add_size(stats.load_sizes, record.size)
    elif op in STORES:
        current.stores += 1
        _add_size(stats.store_sizes, record.size)
    elif op is Op.TPC_FINISH:
        current.committed = True
    elif op is Op.TPC_ABORT:
        current.aborted = True
    elif op is Op.POLL:
        stats.invalidate_all += bool(record.flags & FLAG_NONE)
        stats.invalidated_oids += record.size


# --- lines -----------------------------------------------------------------------------


def _percentile(counts: collections.Counter[int], fraction: float) -> int:
    total = sum(counts.values())
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= fraction * total:
            return value
    return 0


def _when(wall_ns: int | None) -> str:
    if wall_ns is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(wall_ns / 1e9, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(
            zip(row, widths, strict=True)))
        .rstrip()
        for row in rows
    ]  # fmt: skip


def format_stats(stats: TraceStats) -> list[str]:
    """The summary ``trace-stats`` prints."""
    lines = [
        f"{stats.files} trace file(s) of {len(stats.processes)} process(es), "
        f"{stats.records} records, {stats.seconds:.3f} s "
        f"({_when(stats.first_wall_ns)} to {_when(stats.last_wall_ns)})",
        "",
    ]
    rows = [["operation", "calls", "errors"]]
    for op in Op:
        if stats.calls[op] or stats.errors[op]:
            rows.append([op.name.lower(), str(stats.calls[op]), str(stats.errors[op])])
    lines += _table(rows)
    lines += ["", *_transaction_lines(stats), "", *_size_lines(stats)]
    if stats.classes:
        lines += ["", *_table([["class", "records"]] + [
            [name, str(count)] for name, count in stats.classes.most_common(20)
        ])]  # fmt: skip
    return lines


def _transaction_lines(stats: TraceStats) -> list[str]:
    count = stats.transactions
    lines = [
        f"transactions: {count} ({stats.committed} committed, {stats.aborted} aborted); "
        f"polls returned {stats.invalidated_oids} invalidated oids"
        + (
            f", 'invalidate everything' {stats.invalidate_all} times"
            if stats.invalidate_all
            else ""
        )
    ]
    if not count:
        return lines
    rows = [["per transaction", "mean", "p50", "p90", "p99", "max"]]
    for name, counts in (
        ("loads", stats.loads_per_transaction),
        ("stores", stats.stores_per_transaction),
    ):
        mean = sum(value * n for value, n in counts.items()) / count
        rows.append(
            [name, f"{mean:.2f}"]
            + [str(_percentile(counts, f)) for f in (0.5, 0.9, 0.99)]
            + [str(max(counts))]
        )
    return lines + _table(rows)


def _size_lines(stats: TraceStats) -> list[str]:
    rows = [["record size (bytes)", "loads", "load bytes", "stores", "store bytes"]]
    for size in sorted(set(stats.load_sizes) | set(stats.store_sizes)):
        low = size // 2 + 1 if size > 1 else size
        loads = stats.load_sizes.get(size, [0, 0])
        stores = stats.store_sizes.get(size, [0, 0])
        rows.append(
            [f"{low}-{size}" if low != size else str(size)] + [str(v) for v in (*loads, *stores)]
        )
    if len(rows) == 1:
        return ["no loads or stores"]
    return _table(rows)

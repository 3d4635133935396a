"""A recording's records fed to an analysis (popularity, working set, timing, conflicts).

The analysis itself (:class:`zodbshootout.results.trace_analysis.TraceAnalysis`)
lives beneath every package; this module, which may import nothing of the
tool's flow, feeds any object with its three methods (:class:`Analysis`)
from the records :func:`zodbshootout.recording.stats.trace_stats` reads, so a
trace is read once for the counts and the analysis together.

A transaction's start is the time of its first load, store or ``tpc_begin``
(a connection's transaction number changes at each invalidation poll; one
that polls and does nothing is no transaction, as in :mod:`.stats`).  A
store's connection is the process and the connection number.
"""

from __future__ import annotations

from typing import Protocol

from zodbshootout.recording.format import FLAG_ERROR, Op, Record
from zodbshootout.recording.reader import Trace
from zodbshootout.recording.stats import LOADS, STORES


class Analysis(Protocol):
    def load(self, wall_ns: int, oid: int, size: int) -> None: ...

    def store(self, wall_ns: int, oid: int, size: int, connection: object = None) -> None: ...

    def transaction(self, wall_ns: int) -> None: ...

    def start_at(self, wall_ns: int) -> None: ...


_STARTS = frozenset({Op.NEW_INSTANCE, Op.BEFORE_INSTANCE})


class Feed:
    """Called with each (trace, record) that trace_stats reads; feeds *analysis*."""

    def __init__(self, analysis: Analysis, traces: list[Trace]) -> None:
        self.analysis = analysis
        self.current: dict[tuple[int, int], int] = {}
        if traces:
            analysis.start_at(min(trace.header.base_wall_ns for trace in traces))

    def __call__(self, trace: Trace, record: Record) -> None:
        op = record.op
        if record.flags & FLAG_ERROR or op is Op.CLASS:
            return
        key = (trace.header.pid, record.connection)
        if op in _STARTS:
            self.current.pop(key, None)
            return
        wall = trace.header.base_wall_ns + record.time_ns
        if op in LOADS:
            self.analysis.load(wall, record.oid, record.size)
        elif op in STORES:
            self.analysis.store(wall, record.oid, record.size, key)
        elif op is not Op.TPC_BEGIN:
            return
        if self.current.get(key) != record.transaction:
            self.current[key] = record.transaction
            self.analysis.transaction(wall)

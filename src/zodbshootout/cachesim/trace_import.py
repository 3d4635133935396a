"""A ZEO or RelStorage client cache trace read into the trace analyzer.

ZEO's ``ClientCache`` and RelStorage's ``ZEOTracer`` write the same format
(:mod:`zodbshootout.cachesim.records` reads it, bounded and checked).  It is
what one client's cache saw, which is less than a recording
(:mod:`zodbshootout.recording`) holds; :data:`LACKS` says what, and the
analysis leaves out the figures that would need it.

How the records become accesses: a load hit (0x22, 0x26) is a load of the
size it gives, or else of the oid's last known size; a load miss (0x20,
0x24) is a load of the size of the store that fills it next (the fill is
part of the load, not a store); any other store (0x50-0x5e) is a write of
the cache (a commit's own objects, or a prefetch): counted as a store; an
invalidation (0x10-0x1e) is counted, not analyzed (another client's commit,
seen without its size or connection).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

from zodbshootout.cachesim.records import (
    MARKER,
    RECORD,
    _is_zeo_start,
    _open_decompressed,
    _zeo_records,
)
from zodbshootout.errors import UsageError
from zodbshootout.results.trace_analysis import TraceAnalysis

#: What a cache trace can't tell, each a sentence the output prints.
LACKS = [
    "no transaction boundaries: loads and stores per transaction and the transactions' "
    "inter-arrival times are unknown",
    "no connection identity (one cache serves all of a process's connections): conflict "
    "candidates are unknown",
    "timestamps in whole seconds: the working set is counted in windows of a second or more",
    "only the client cache's traffic: loads the pickle cache served are not in it",
    "stores are the cache's, not the application's: a commit's objects and prefetched ones "
    "alike; other clients' commits are invalidations without sizes",
    "loadBefore hits (0x26) carry no size: the oid's last known size is used",
]

_HITS = frozenset({0x22, 0x26})
_MISSES = frozenset({0x20, 0x24})
_SECOND = 1_000_000_000


@dataclass
class CacheTraceCounts:
    """The records of a cache trace by kind, as the trace tells them."""

    files: int = 0
    records: int = 0
    first_seconds: int | None = None
    last_seconds: int | None = None
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    #: Loads whose size no record gave (a hit of an oid never filled in the trace).
    unsized_loads: int = 0


def is_cache_trace(head: bytes) -> bool:
    """Whether *head* (a file's first bytes) starts a ZEO-format cache trace."""
    return _is_zeo_start(head[: RECORD.size])


def import_cache_traces(
    paths: list[str], analysis: TraceAnalysis, max_bytes: int
) -> CacheTraceCounts:
    """Each cache trace of *paths* fed to *analysis*; the records counted by kind."""
    counts = CacheTraceCounts()
    for path in paths:
        with _open_decompressed(path, max_bytes) as file:
            if not _is_zeo_start(file.peek(RECORD.size)[: RECORD.size]):
                raise UsageError(
                    f"{path}: not a zodbshootout trace (wrong magic) nor a ZEO / RelStorage "
                    "cache trace"
                )
            _Importer(analysis, counts).read(path, file)
        counts.files += 1
    return counts


class _Importer:
    def __init__(self, analysis: TraceAnalysis, counts: CacheTraceCounts) -> None:
        self.analysis = analysis
        self.counts = counts
        self.sizes: dict[int, int] = {}
        self.missed: dict[int, int] = {}  # oid -> when its miss was, until filled

    def read(self, path: str, file: object) -> None:
        counts = self.counts
        for code, dlen, oid, _tid, seconds in _zeo_records(path, file):  # type: ignore[arg-type]
            if code == 0:
                counts.kinds["start" if not oid.startswith(MARKER) else "marker"] += 1
                continue
            counts.records += 1
            if counts.first_seconds is None or seconds < counts.first_seconds:
                counts.first_seconds = seconds
            if counts.last_seconds is None or seconds > counts.last_seconds:
                counts.last_seconds = seconds
            self.record(code, dlen, int.from_bytes(oid, "big"), seconds * _SECOND)
        for key, when in self.missed.items():  # misses never filled: the last size known
            self._load(when, key, self.sizes.get(key, 0))
        self.missed.clear()

    def record(self, code: int, dlen: int, key: int, wall: int) -> None:
        kinds = self.counts.kinds
        if code in _HITS:
            kinds["load hit"] += 1
            self._load(wall, key, dlen or self.sizes.get(key, 0))
        elif code in _MISSES:
            kinds["load miss"] += 1
            if key in self.missed:  # a second miss before the fill: the first is done
                self._load(self.missed[key], key, self.sizes.get(key, 0))
            self.missed[key] = wall
        elif code & 0x70 == 0x50:
            self.sizes[key] = dlen
            when = self.missed.pop(key, None)
            if when is not None:
                kinds["store filling a miss"] += 1
                self._load(when, key, dlen)
            else:
                kinds["store (commit or prefetch)"] += 1
                self.analysis.store(wall, key, dlen)
        else:
            kinds["invalidation"] += 1

    def _load(self, wall: int, key: int, size: int) -> None:
        if not size:
            self.counts.unsized_loads += 1
        self.analysis.load(wall, key, size)

"""What a trace says about an application's data: popularity, sizes, working set, timing.

A :class:`TraceAnalysis` is fed one access at a time (``load``, ``store``,
``transaction``), by whatever reads the trace: a zodbshootout recording
(:mod:`zodbshootout.recording.analysis`) or a ZEO / RelStorage cache trace
(:mod:`zodbshootout.cachesim.trace_import`); :meth:`TraceAnalysis.summary`
then computes the figures.  Times are wall-clock nanoseconds; the feeder
says what its trace can't tell (transactions, connections, fine timestamps)
and the summary leaves those figures out, saying why.

Memory is bounded by the trace's distinct objects, transactions and stores,
never by its loads: loads are counted per oid, the working set is kept in at
most :data:`MAX_WINDOWS` time windows (their width doubles as the trace
grows longer).
"""

from __future__ import annotations

import collections
import itertools
import math
from dataclasses import dataclass, field

#: Windows the working set is counted in: when a trace spans more, each pair merges.
MAX_WINDOWS = 64
#: The first window's width: 10 ms (doubled as often as the trace's span needs).
FIRST_WINDOW_NS = 10_000_000
#: An oid counts towards the zipf fit if it was loaded at least this often
#: (below, the counts are steps of one and the rank-frequency line flattens).
ZIPF_MIN_LOADS = 5
#: Points of the fit, spaced evenly on the logarithm of the rank (so that the
#: many high ranks do not outweigh the few low ones).
ZIPF_POINTS = 40


@dataclass
class ZipfFit:
    """log(loads) = c - exponent * log(rank), least squares over log-spaced ranks."""

    exponent: float
    #: e ** intercept: the fitted line's loads at rank 1.
    scale: float
    r_squared: float
    #: The oids fitted (those loaded at least ZIPF_MIN_LOADS times).
    oids: int


@dataclass
class Spread:
    """A distribution's count, mean, percentiles and maximum."""

    count: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float


@dataclass
class Summary:
    """The figures of one analysis; None where the trace can't give one (see :attr:`lacks`)."""

    loads: int
    stores: int
    loaded_oids: int
    stored_oids: int
    #: Share of all loads that went to the most-loaded 1 % / 10 % of the loaded oids.
    top1_share: float | None
    top10_share: float | None
    zipf: ZipfFit | None
    #: Loads per oid by rank (most loaded first), for the chart.
    rank_loads: list[int]
    load_sizes: Spread | None
    store_sizes: Spread | None
    #: The windows' width and, per window from the first: distinct oids used in it,
    #: and distinct oids used so far.
    window_ns: int
    working_set: list[int]
    cumulative: list[int]
    #: Gaps between successive transactions' starts (all connections together), ns.
    inter_arrival: Spread | None
    inter_arrival_ns: list[int]
    conflict_window_ns: int
    #: Stores of an oid that another connection stored within the window before.
    conflict_stores: int | None
    conflict_oids: list[tuple[int, int]] | None  # (oid, such stores), most first
    #: What the trace lacks, each a sentence (figures left out because of it).
    lacks: list[str] = field(default_factory=list)


class TraceAnalysis:
    """The accumulator: feed it accesses in any order, then ask for :meth:`summary`."""

    def __init__(
        self,
        conflict_window_ns: int = 1_000_000_000,
        *,
        transactions: bool = True,
        connections: bool = True,
        lacks: list[str] | None = None,
        resolution_ns: int = 1,
    ) -> None:
        if conflict_window_ns < 0:
            raise ValueError("the conflict window is a duration, 0 or more")
        self.conflict_window_ns = conflict_window_ns
        self.has_transactions = transactions
        self.has_connections = connections
        self.lacks = list(lacks or [])
        self.load_counts: collections.Counter[int] = collections.Counter()
        self.load_sizes: collections.Counter[int] = collections.Counter()
        self.store_sizes: collections.Counter[int] = collections.Counter()
        self.first_used: dict[int, int] = {}
        self.stores: list[tuple[int, int, object]] = []  # (time, oid, connection)
        self.starts: list[int] = []
        self._origin: int | None = None
        # A window narrower than the timestamps' resolution would count nothing real.
        self._width = max(FIRST_WINDOW_NS, resolution_ns)
        self._windows: dict[int, set[int]] = {}

    # --- feeding --------------------------------------------------------------------

    def load(self, wall_ns: int, oid: int, size: int) -> None:
        self.load_counts[oid] += 1
        self.load_sizes[size] += 1
        self._use(wall_ns, oid)

    def store(self, wall_ns: int, oid: int, size: int, connection: object = None) -> None:
        self.store_sizes[size] += 1
        self.stores.append((wall_ns, oid, connection))
        self._use(wall_ns, oid)

    def transaction(self, wall_ns: int) -> None:
        """A transaction (one that loaded, stored or committed) started at *wall_ns*."""
        self.starts.append(wall_ns)

    def start_at(self, wall_ns: int) -> None:
        """The time the windows count from (the earliest a feeder will give), if known."""
        if self._origin is None:
            self._origin = wall_ns

    def _use(self, wall_ns: int, oid: int) -> None:
        first = self.first_used.get(oid)
        if first is None or wall_ns < first:
            self.first_used[oid] = wall_ns
        if self._origin is None:
            self._origin = wall_ns
        index = (wall_ns - self._origin) // self._width
        while index >= MAX_WINDOWS or index < -MAX_WINDOWS:
            self._widen()
            index = (wall_ns - self._origin) // self._width
        window = self._windows.get(index)
        if window is None:
            window = self._windows[index] = set()
        window.add(oid)

    def _widen(self) -> None:
        self._width *= 2
        merged: dict[int, set[int]] = {}
        for index, oids in self._windows.items():
            target = merged.setdefault(index // 2, set())
            target |= oids
        self._windows = merged

    # --- the figures ----------------------------------------------------------------

    def summary(self) -> Summary:
        ranked = sorted(self.load_counts.values(), reverse=True)
        loads = sum(ranked)
        working, cumulative = self._working_set()
        gaps = self._gaps()
        conflicts = self._conflicts() if self.has_connections else None
        return Summary(
            loads=loads,
            stores=len(self.stores),
            loaded_oids=len(ranked),
            stored_oids=len({oid for _, oid, _ in self.stores}),
            top1_share=top_share(ranked, 0.01),
            top10_share=top_share(ranked, 0.10),
            zipf=zipf_fit(ranked),
            rank_loads=ranked,
            load_sizes=spread(self.load_sizes),
            store_sizes=spread(self.store_sizes),
            window_ns=self._width,
            working_set=working,
            cumulative=cumulative,
            inter_arrival=spread(collections.Counter(gaps)) if gaps else None,
            inter_arrival_ns=gaps,
            conflict_window_ns=self.conflict_window_ns,
            conflict_stores=None if conflicts is None else sum(n for _, n in conflicts),
            conflict_oids=conflicts,
            lacks=self.lacks,
        )

    def _working_set(self) -> tuple[list[int], list[int]]:
        if not self._windows:
            return [], []
        low, high = min(self._windows), max(self._windows)
        working = [len(self._windows.get(i, ())) for i in range(low, high + 1)]
        assert self._origin is not None  # set by the first use
        firsts = collections.Counter(
            (t - self._origin) // self._width for t in self.first_used.values()
        )
        cumulative, total = [], 0
        for index in range(low, high + 1):
            total += firsts.get(index, 0)
            cumulative.append(total)
        return working, cumulative

    def _gaps(self) -> list[int]:
        if not self.has_transactions or len(self.starts) < 2:
            return []
        starts = sorted(self.starts)
        return [b - a for a, b in itertools.pairwise(starts)]

    def _conflicts(self) -> list[tuple[int, int]]:
        """Oids stored by a connection within the window after another connection's store."""
        last: dict[int, tuple[int, object]] = {}
        found: collections.Counter[int] = collections.Counter()
        for when, oid, connection in sorted(self.stores, key=lambda s: s[0]):
            before = last.get(oid)
            if (
                before is not None
                and before[1] != connection
                and when - before[0] <= self.conflict_window_ns
            ):
                found[oid] += 1
            last[oid] = (when, connection)
        return found.most_common()


def top_share(ranked: list[int], fraction: float) -> float | None:
    """The share of loads on the most-loaded *fraction* of oids (at least one oid)."""
    total = sum(ranked)
    if not total:
        return None
    count = max(1, math.ceil(len(ranked) * fraction))
    return sum(ranked[:count]) / total


def zipf_fit(ranked: list[int]) -> ZipfFit | None:
    """The zipf exponent of loads by rank (*ranked*: most loaded first), None if too few."""
    head = [count for count in ranked if count >= ZIPF_MIN_LOADS]
    if len(head) < 10:
        return None
    ranks = sorted(
        {round(math.exp(math.log(len(head)) * i / (ZIPF_POINTS - 1))) for i in range(ZIPF_POINTS)}
    )
    xs = [math.log(rank) for rank in ranks]
    ys = [math.log(head[rank - 1]) for rank in ranks]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    syy = sum((y - mean_y) ** 2 for y in ys)
    slope = sxy / sxx
    r_squared = (sxy * sxy) / (sxx * syy) if syy else 1.0
    scale = math.exp(mean_y - slope * mean_x)
    return ZipfFit(exponent=-slope, scale=scale, r_squared=r_squared, oids=len(head))


def spread(counts: collections.Counter[int]) -> Spread | None:
    """The spread of values counted in *counts* (value -> how often)."""
    total = sum(counts.values())
    if not total:
        return None
    values = sorted(counts)

    def at(fraction: float) -> float:
        seen = 0
        for value in values:
            seen += counts[value]
            if seen >= fraction * total:
                return value
        return values[-1]

    mean = sum(value * n for value, n in counts.items()) / total
    return Spread(total, mean, at(0.5), at(0.9), at(0.99), values[-1])

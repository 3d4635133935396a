"""The rows beside the rates: cache hit rates, bytes per object, index keys per second.

Pure functions of a :class:`RunResult`, like the statistics:

cache hit rate (read phases)
    hits ÷ (hits + misses), over every worker and repetition.  Hits: loads
    the storage's client cache answered (ZEO's cache, RelStorage's local
    cache, a persistent cache loaded at start), as the storage counts them.
    Misses: the connections' loads (pickle-cache misses) the cache did not
    answer.  The storage also counts a hit that no connection load made:
    ``Connection.root()`` loads the root object from the storage directly,
    so a read that follows finds it in the cache; that one hit per worker
    is why a cold read shows a fraction of a percent and not 0.  A storage
    without a client cache gets a footnote.
memcached hit rate (read phases, RelStorage with ``cache-servers``)
    get hits ÷ gets of the memcached servers over the phase, read by worker
    0 between the barriers from pylibmc's ``get_stats``: the servers count
    every client's gets, so this is all workers' (and anyone else's using
    the same servers).
bytes per object (add, update)
    What the storage grew by over the phase (read by worker 0 after every
    worker committed, untimed) ÷ the objects the phase wrote.  A storage
    whose size can't be read gets a footnote with the reason.
index keys per second (add, update, with ``--index-entries K``)
    (K + 1) × the phase's objects per second: each object's container
    entry and its K index entries (see zodbshootout.workload.indexes).
work per transaction (every phase, with ``--work``)
    A row per count (see zodbshootout.results.work.WORK_COUNTS): loads and
    round trips always, the others where some database did any.  The mean
    per transaction of the counting pass (the warm-up repetition); its
    JSON cell also holds the total and the mean per object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zodbshootout.render.description import is_floor
from zodbshootout.render.labels import phase_label
from zodbshootout.results.record import CellKey, PhaseTiming, RunResult
from zodbshootout.results.work import ALWAYS_SHOWN, WORK_COUNTS, CellWork, counted_cells

CACHE_PHASES = ("warm", "cold", "prefetch", "hot", "steamin")
SIZE_PHASES = ("add", "update")
KEY_PHASES = ("add", "update")

CACHE_HIT_RATE = "cache_hit_rate"
SHARED_CACHE_HIT_RATE = "shared_cache_hit_rate"
BYTES_PER_OBJECT = "bytes_per_object"
INDEX_KEYS_PER_SECOND = "index_keys_per_second"
WORK_PER_TRANSACTION = "work_per_transaction"


@dataclass(frozen=True)
class InsightCell:
    """One figure (with its parts, for JSON), or the footnote saying why there is none."""

    value: float | None
    text: str
    footnote: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class InsightRow:
    kind: str  # CACHE_HIT_RATE, BYTES_PER_OBJECT or INDEX_KEYS_PER_SECOND
    phase: str
    object_count: int
    label: str
    cells: list[InsightCell]


def keys_per_object(index_entries: int) -> int:
    """Keys written per object: the container's entry plus the index entries.

    The same sum as :func:`zodbshootout.workload.indexes.keys_per_object`
    (a unit test holds them equal); written here so that render/ needs
    nothing from workload/.
    """
    return 1 + index_entries


def index_entries(result: RunResult) -> int:
    """The run's --index-entries (0 when not used)."""
    return int(result.metadata.get("index_entries") or 0)


def insight_rows(
    result: RunResult,
    concurrency: int,
    rates: dict[CellKey, float | None],
    footnotes: list[str],
    kinds: tuple[str, ...] | None = None,
) -> list[InsightRow]:
    """The insight rows of one concurrency block; new footnotes are appended to *footnotes*.

    *rates* holds the block's aggregated objects/s (None where unmeasured), as
    the main table shows them; *kinds* limits the rows to those kinds (None: all).
    """
    wanted = {
        CACHE_HIT_RATE: _has_cache_counts(result),
        SHARED_CACHE_HIT_RATE: _has_shared_counts(result),
        BYTES_PER_OBJECT: _has_size_readings(result),
        INDEX_KEYS_PER_SECOND: bool(index_entries(result)),
    }
    work = counted_cells(result)
    wanted[WORK_PER_TRANSACTION] = bool(work)
    if kinds is not None:
        wanted = {kind: shown and kind in kinds for kind, shown in wanted.items()}
    rows: list[InsightRow] = []
    for count in result.object_counts:
        for phase in result.phases:
            for kind in (CACHE_HIT_RATE, SHARED_CACHE_HIT_RATE):
                if phase in CACHE_PHASES and wanted[kind]:
                    rows.append(_hit_rate_row(result, kind, concurrency, count, phase, footnotes))
            if phase in SIZE_PHASES and wanted[BYTES_PER_OBJECT]:
                rows.append(_size_row(result, concurrency, count, phase, footnotes))
            if phase in KEY_PHASES and wanted[INDEX_KEYS_PER_SECOND]:
                rows.append(_keys_row(result, concurrency, count, phase, rates, footnotes))
            if wanted[WORK_PER_TRANSACTION]:
                rows.extend(_work_rows(result, work, concurrency, count, phase, footnotes))
    return rows


def _has_shared_counts(result: RunResult) -> bool:
    return any(m.timing.shared_cache_hits is not None for m in result.measurements)


def _has_cache_counts(result: RunResult) -> bool:
    return any(m.timing.cache_hits is not None for m in result.measurements)


def _size_descriptions(result: RunResult) -> dict[str, dict[str, Any]]:
    """Per database: how its size was read ("method") or why not ("unknown")."""
    databases = result.metadata.get("databases", {})
    return {name: info["size"] for name, info in databases.items() if "size" in info}


def _has_size_readings(result: RunResult) -> bool:
    return bool(_size_descriptions(result))


def not_applicable_reason(result: RunResult, key: CellKey) -> str | None:
    """Why a raw store has no figure for this phase (the same text for every floor)."""
    reasons = result.metadata.get("not_applicable", {}).get(key.database, {})
    if key.phase not in reasons:
        return None
    return f"no {key.phase} for a raw key-value store: {reasons[key.phase]}"


def _footnote(text: str, footnotes: list[str]) -> int:
    if text not in footnotes:
        footnotes.append(text)
    return footnotes.index(text) + 1


def unmeasured_reason(result: RunResult, key: CellKey) -> str:
    """Why a cell has no figure: its failure, a raw store's lack of the phase, or the run."""
    failure = result.failure_for(key)
    not_applicable = not_applicable_reason(result, key)
    if failure is not None:
        return f"{key.database} (concurrency {key.concurrency}): {failure.reason}"
    if not_applicable is not None:
        return not_applicable
    if result.interrupted:
        return "not measured: the run was interrupted"
    return "not measured"


def _unmeasured(result: RunResult, key: CellKey, footnotes: list[str]) -> InsightCell:
    """The cell of a phase that has no rate: the main table's reason, same footnote."""
    return InsightCell(None, "n/a", _footnote(unmeasured_reason(result, key), footnotes))


def _client_cache_counts(timings: list[PhaseTiming]) -> tuple[int, int] | None:
    """(hits, misses) of the storages' client caches; None without a client cache."""
    if all(t.cache_hits is None for t in timings):
        return None
    # Threads sharing one DB: worker 0 records the cache's hits for all workers.
    hits = sum(t.cache_hits or 0 for t in timings)
    return hits, max(0, sum(t.loads for t in timings) - hits)


def _memcached_counts(timings: list[PhaseTiming]) -> tuple[int, int] | None:
    """(hits, misses) of memcached's gets, server-wide; None without memcached."""
    counted = [t for t in timings if t.shared_cache_hits is not None]
    if not counted:
        return None
    hits = sum(t.shared_cache_hits or 0 for t in counted)
    return hits, sum(t.shared_cache_misses or 0 for t in counted)


@dataclass(frozen=True)
class _HitRateSource:
    """Where a hit-rate row's counts come from, and how its cells read."""

    label: str
    counts: Callable[[list[PhaseTiming]], tuple[int, int] | None]
    missing: str  # the footnote of a database without this cache, after its name
    no_lookups: str  # the cell's text when nothing was looked up


_HIT_RATE_SOURCES = {
    CACHE_HIT_RATE: _HitRateSource(
        "cache hit rate",
        _client_cache_counts,
        "no client cache between the connections and the storage",
        "no loads",
    ),
    SHARED_CACHE_HIT_RATE: _HitRateSource(
        "memcached hit rate (server-wide)",
        _memcached_counts,
        "no shared cache (memcached) whose servers count gets",
        "no gets",
    ),
}


def _hit_rate_row(
    result: RunResult,
    kind: str,
    concurrency: int,
    count: int,
    phase: str,
    footnotes: list[str],
) -> InsightRow:
    """A row of one cache's hit rate per database (*kind*: a key of _HIT_RATE_SOURCES)."""
    source = _HIT_RATE_SOURCES[kind]
    cells = []
    for database in result.databases:
        key = CellKey(database, concurrency, count, phase)
        timings = _cell_timings(result, key)
        if not timings:
            cells.append(_unmeasured(result, key, footnotes))
        elif (counts := source.counts(timings)) is None:
            reason = f"{database}: {source.missing}"
            cells.append(InsightCell(None, "n/a", _footnote(reason, footnotes)))
        else:
            cells.append(_hit_rate_cell(*counts, source.no_lookups))
    label = f"{phase_label(phase, count)}: {source.label}"
    return InsightRow(kind, phase, count, label, cells)


def _cell_timings(result: RunResult, key: CellKey) -> list[PhaseTiming]:
    """Every worker's timing in every repetition of the cell *key*."""
    return [timing for timings in result.timings_for(key).values() for timing in timings]


def _hit_rate_cell(hits: int, misses: int, no_lookups: str) -> InsightCell:
    """A hit-rate cell; *no_lookups* is its text when nothing was looked up."""
    lookups = hits + misses
    rate = hits / lookups if lookups else None
    text = no_lookups if rate is None else f"{100 * rate:.1f} %"
    return InsightCell(rate, text, detail={"hits": hits, "misses": misses})


def _size_row(
    result: RunResult, concurrency: int, count: int, phase: str, footnotes: list[str]
) -> InsightRow:
    readings = _size_descriptions(result)
    cells = []
    for database in result.databases:
        key = CellKey(database, concurrency, count, phase)
        by_repetition = result.timings_for(key)
        reading = readings.get(database, {})
        grown = [
            (sum(t.storage_growth_bytes or 0 for t in ts), sum(t.objects for t in ts))
            for ts in by_repetition.values()
            if any(t.storage_growth_bytes is not None for t in ts)
        ]
        if grown:
            cells.append(_size_cell(database, grown, reading, footnotes))
        elif not by_repetition:
            cells.append(_unmeasured(result, key, footnotes))
        else:
            why = reading.get("unknown") or "its size was not read"
            cells.append(InsightCell(None, "n/a", _footnote(f"{database}: {why}", footnotes)))
    label = f"{phase_label(phase, count)}: bytes/object"
    return InsightRow(BYTES_PER_OBJECT, phase, count, label, cells)


def _size_cell(
    database: str, grown: list[tuple[int, int]], reading: dict[str, Any], footnotes: list[str]
) -> InsightCell:
    """Bytes per object from the growth of each repetition; a note where the storage
    grows in steps (InnoDB's 1 MiB extents) larger than what the phase wrote."""
    growth = sum(g for g, _ in grown)
    objects = sum(n for _, n in grown)
    per_object = growth / objects
    detail = {"growth_bytes": growth, "objects": objects, "method": reading.get("method")}
    step = reading.get("granularity_bytes")
    if step and max(g for g, _ in grown) < step:
        per_step = step // (1 << 20)
        note = (
            f"{database}: its size grows in {per_step} MiB extents, and no repetition of "
            f"this phase grew it by one ({objects // len(grown):,} objects): run more objects "
            "(-n) for a figure"
        )
        return InsightCell(None, "< 1 extent", _footnote(note, footnotes), detail=detail)
    return InsightCell(per_object, f"{per_object:,.0f} B", detail=detail)


def _keys_row(
    result: RunResult,
    concurrency: int,
    count: int,
    phase: str,
    rates: dict[CellKey, float | None],
    footnotes: list[str],
) -> InsightRow:
    entries = index_entries(result)
    per_object = keys_per_object(entries)
    described = result.metadata.get("databases", {})
    cells = []
    for database in result.databases:
        key = CellKey(database, concurrency, count, phase)
        rate = rates.get(key)
        if is_floor(described.get(database, {})):
            reason = f"{database}: a raw key-value floor keeps no index entries"
            cells.append(InsightCell(None, "n/a", _footnote(reason, footnotes)))
        elif rate is None:
            cells.append(_unmeasured(result, key, footnotes))
        else:
            keys = rate * per_object
            cells.append(InsightCell(keys, f"{keys:,.0f}", detail={"keys_per_object": per_object}))
    label = f"{phase_label(phase, count)}: index keys/s (1 + {entries} per object)"
    return InsightRow(INDEX_KEYS_PER_SECOND, phase, count, label, cells)


def _work_rows(
    result: RunResult,
    work: dict[CellKey, CellWork],
    concurrency: int,
    count: int,
    phase: str,
    footnotes: list[str],
) -> list[InsightRow]:
    """One phase's work per transaction: loads and round trips, and what else some did."""
    keys = [CellKey(database, concurrency, count, phase) for database in result.databases]
    cells = [work.get(key) for key in keys]
    shown = [
        name
        for name in WORK_COUNTS
        if name in ALWAYS_SHOWN or any(c is not None and c.totals.get(name) for c in cells)
    ]
    rows = []
    for name in shown:
        row = [
            _work_cell(result, key, cell, name, footnotes)
            for key, cell in zip(keys, cells, strict=True)
        ]
        label = f"{phase_label(phase, count)}: {name.replace('_', ' ')}/transaction"
        rows.append(InsightRow(WORK_PER_TRANSACTION, phase, count, label, row))
    return rows


def _work_cell(
    result: RunResult, key: CellKey, work: CellWork | None, name: str, footnotes: list[str]
) -> InsightCell:
    if work is None:
        if not result.timings_for(key):
            return _unmeasured(result, key, footnotes)
        why = f"{key.database}: its counting pass (the warm-up) recorded no work"
        return InsightCell(None, "n/a", _footnote(why, footnotes))
    mean = work.per_transaction(name)
    if mean is None:
        why = f"{key.database}: zodbshootout can't count {name.replace('_', ' ')} of its storage"
        return InsightCell(None, "n/a", _footnote(why, footnotes))
    detail = {
        "name": name,
        "total": work.totals[name],
        "transactions": work.transactions,
        "per_object": work.per_object(name),
    }
    return InsightCell(mean, work_text(mean), detail=detail)


def work_text(value: float) -> str:
    """A count per transaction: whole when it is, else one decimal; no separators (csv)."""
    return f"{value:.0f}" if value == int(value) else f"{value:.1f}"

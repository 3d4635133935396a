"""A mix run's series as charts read them: chosen, summed over workers, grouped into panels.

The samplers (``probes/series.py``, the storage kinds' samplers) record two
kinds of series with the same shape: a *counter* only grows, and what
happened between two samples is the difference of their values (commits,
hits, blocks read); a *gauge* is a level at the sample (objects, bytes,
rows, connections).  A series does not say which it is in the result file,
so the fields are listed by name in ``results/mix.py``, as the samplers define them; a test
checks that every field a sampler reads is in exactly one list.  A field
neither list knows is drawn as a gauge (its values as they are).

A chart shows a counter as a rate per second, Δvalue ÷ Δt between
consecutive samples, and a gauge as its level.  The client's series
(``client.<worker>.<field>``) are added up over the workers, sample by
sample on the interval they close, so a panel shows the client side of the
database as a whole.  A panel holds the series of one source (``client``,
``postgresql``, ``zeo``, ``memcached HOST:PORT`` …), one kind and one unit,
so that each has one y axis.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

from zodbshootout.results.mix import MixRecord, is_counter

#: The series drawn without --series: the client's caches and memory, and per server
#: its commits, conflicts, reads from disk, lock waits and bloat.
DEFAULT_PATTERNS = (
    "client.pickle_cache_objects",
    "client.client_cache_objects",
    "client.client_cache_hits",
    "client.client_cache_misses",
    "client.rss",
    "*.commits",
    "*.conflicts",
    "*.deadlocks",
    "zeo.loads",
    "zeo.waiting",
    "postgresql.blocks_read",
    "postgresql.object_state.dead_rows",
    "postgresql.waiting_on_locks",
    "mysql.buffer_pool_reads",
    "mysql.row_lock_waits",
    "innodb.history_list_length",
    "memcached *.get_hits",
    "memcached *.get_misses",
    "memcached *.evictions",
)

_NAME = re.compile(r"^(memcached \S*:\d+|[^.]+)\.(.+)$")
_CLIENT = re.compile(r"^client\.\d+\.(.+)$")


def split_name(name: str) -> tuple[str, str]:
    """(source, field) of a series name: ``client``, ``zeo``, ``memcached H:P`` …

    A client series loses its worker (``client.0.rss`` → ``("client", "rss")``).
    """
    client = _CLIENT.match(name)
    if client:
        return "client", client.group(1)
    found = _NAME.match(name)
    if not found:
        return name, name
    return found.group(1), found.group(2)


@dataclass(frozen=True)
class Line:
    """One series of a panel: (t seconds, value) points; rates per second for a counter."""

    label: str
    t: tuple[float, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class Panel:
    """The series of one source, kind and unit: one y axis."""

    source: str
    unit: str
    rate: bool
    lines: tuple[Line, ...]

    @property
    def title(self) -> str:
        what = f"{self.unit}/s" if self.rate else self.unit
        return f"{self.source}: {what}"


def chosen(record: MixRecord, patterns: Sequence[str] | None = None) -> list[str]:
    """The names (worker left out: ``client.rss``) of *record*'s series the patterns match.

    *patterns* are shell-style (``fnmatch``); None: :data:`DEFAULT_PATTERNS`.
    """
    wanted = DEFAULT_PATTERNS if patterns is None else tuple(patterns)
    names: list[str] = []
    for name in record.series:
        source, field = split_name(name)
        short = f"{source}.{field}"
        if short not in names and any(fnmatch.fnmatchcase(short, p) for p in wanted):
            names.append(short)
    return names


def _summed(record: MixRecord, field: str) -> tuple[str, list[float], list[float]]:
    """Every worker's *field* added up, sample by sample on the interval it closes."""
    step = record.interval_length_seconds
    totals: dict[int, float] = {}
    times: dict[int, float] = {}
    workers: dict[int, int] = {}
    unit = ""
    count = 0
    for name, series in record.series.items():
        if split_name(name) != ("client", field):
            continue
        unit = series.unit
        count += 1
        for t, value in zip(series.t, series.values, strict=True):
            slot = round(t / step)
            totals[slot] = totals.get(slot, 0.0) + value
            times[slot] = max(times.get(slot, t), t)
            workers[slot] = workers.get(slot, 0) + 1
    slots = sorted(slot for slot in totals if workers[slot] == count)  # every worker sampled
    return unit, [times[s] for s in slots], [totals[s] for s in slots]


def _points(record: MixRecord, short: str) -> tuple[str, list[float], list[float]]:
    source, field = split_name(short)
    if source == "client":
        return _summed(record, field)
    series = record.series[short]
    return series.unit, list(series.t), [float(v) for v in series.values]


def rates(times: Sequence[float], values: Sequence[float]) -> tuple[list[float], list[float]]:
    """A counter's rate per second between consecutive samples, at the later one's time.

    A pair of samples no time apart is skipped; a counter that went down (a
    server restarted) gives no rate for that step rather than a negative one.
    """
    out_t: list[float] = []
    out_v: list[float] = []
    for i in range(1, len(times)):
        span = times[i] - times[i - 1]
        change = values[i] - values[i - 1]
        if span > 0 and change >= 0:
            out_t.append(times[i])
            out_v.append(change / span)
    return out_t, out_v


def panels(record: MixRecord, patterns: Sequence[str] | None = None) -> list[Panel]:
    """*record*'s chosen series as panels, in the order their sources were sampled."""
    grouped: dict[tuple[str, bool, str], list[Line]] = {}
    for short in chosen(record, patterns):
        source, field = split_name(short)
        unit, times, values = _points(record, short)
        rate = is_counter(field)
        if rate:
            times, values = rates(times, values)
        grouped.setdefault((source, rate, unit), []).append(
            Line(field, tuple(times), tuple(values))
        )
    return [
        Panel(source, unit, rate, tuple(lines)) for (source, rate, unit), lines in grouped.items()
    ]

"""Fairness across a mix run's workers and hosts: shares of the commits, Jain's index, the starved.

A database that serves every client alike gives each of c workers about
1/c of the committed transactions; one that does not (a commit lock that
lets a pair of busy writers starve the others, ZEO#194; a client behind a
slower link) shows it here.  Jain's fairness index of the workers'
committed transactions, ``(Σx)² ÷ (c·Σx²)``, is 1 when all are equal and
1/c when one worker made them all; the smallest and largest share say
which way it leans.  A worker is *starved* when it committed fewer than
:data:`STARVED_SHARE` of the mean (half, by default): a ratio, so it holds
whatever the run's length or the machine's speed, and small enough that
the noise of a busy two-core machine (a worker 20-30 % below the others)
does not raise it.  Pure functions of :class:`~zodbshootout.results.mix.MixRecord`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from zodbshootout.results.histogram import merge
from zodbshootout.results.mix import MixRecord, WorkerTotals

#: A worker whose committed transactions are below this fraction of the
#: workers' mean is starved (a warning names it and its host).
STARVED_SHARE = 0.5


def jain_index(values: Sequence[float]) -> float | None:
    """Jain's fairness index of *values*: 1 all equal, 1/n one of n took all; None if all 0."""
    squares = sum(value * value for value in values)
    if not values or squares == 0:
        return None
    total = sum(values)
    return total * total / (len(values) * squares)


def shares(values: Sequence[float]) -> list[float]:
    """Each value's share of the total (0..1); all 0 when the total is."""
    total = sum(values)
    return [value / total if total else 0.0 for value in values]


def starved(values: Sequence[float], threshold: float = STARVED_SHARE) -> list[int]:
    """The indexes of *values* below *threshold* × their mean (none when the mean is 0)."""
    if not values:
        return []
    mean = sum(values) / len(values)
    return [index for index, value in enumerate(values) if mean > 0 and value < threshold * mean]


@dataclass(frozen=True)
class Share:
    """One worker's (or host's) figures: commits, throughput, p99 and share of the commits."""

    name: str  # "worker 3", or the host's name
    host: str | None
    workers: int
    transactions: int
    per_second: float
    p99_ms: float | None  # None: no transaction
    share: float


@dataclass(frozen=True)
class Fairness:
    """How evenly a database's committed transactions fell on its workers (and hosts)."""

    jain: float | None
    min_share: float
    max_share: float
    workers: tuple[Share, ...]
    #: With --hosts: one per host, in the order the workers' hosts first appear.
    hosts: tuple[Share, ...]
    #: The starved workers (below STARVED_SHARE of the mean).
    starved: tuple[Share, ...]

    @property
    def fair_share(self) -> float:
        return 1 / len(self.workers)


def _share(
    name: str, host: str | None, totals: Sequence[WorkerTotals], seconds: float, all_tx: int
) -> Share:
    transactions = sum(t.transactions for t in totals)
    latency = merge([t.latency for t in totals])
    return Share(
        name=name,
        host=host,
        workers=len(totals),
        transactions=transactions,
        per_second=transactions / seconds if seconds > 0 else 0.0,
        p99_ms=latency.get_value_at_percentile(99.0) / 1000 if transactions else None,
        share=transactions / all_tx if all_tx else 0.0,
    )


def fairness(record: MixRecord) -> Fairness | None:
    """*record*'s fairness; None with fewer than two workers or none recorded (older files)."""
    totals = record.workers
    if len(totals) < 2:
        return None
    counts = [t.transactions for t in totals]
    all_tx = sum(counts)
    workers = tuple(
        _share(f"worker {t.worker}", t.host, [t], t.seconds or record.seconds, all_tx)
        for t in totals
    )
    hosts: list[Share] = []
    names = list(dict.fromkeys(t.host for t in totals if t.host is not None))
    if names:
        for host in names:
            mine = [t for t in totals if t.host == host]
            hosts.append(_share(host, host, mine, record.seconds, all_tx))
    portions = shares(counts)
    return Fairness(
        jain=jain_index(counts),
        min_share=min(portions),
        max_share=max(portions),
        workers=workers,
        hosts=tuple(hosts),
        starved=tuple(workers[index] for index in starved(counts)),
    )


def fairness_line(found: Fairness) -> str:
    """``fairness: Jain 0.98 over 4 workers' commits; shares 23%..27% (fair 25%)``."""
    jain = "-" if found.jain is None else f"{found.jain:.2f}"
    return (
        f"fairness: Jain's index {jain} over {len(found.workers)} workers' committed "
        f"transactions; shares {found.min_share:.0%}..{found.max_share:.0%} "
        f"(fair {found.fair_share:.0%})"
    )


def host_line(host: Share, record_workers: int) -> str:
    """``host b: 2 workers, 81.3 tx/s, p99 12.40 ms, 9% of the commits (fair 50%)``."""
    p99 = "-" if host.p99_ms is None else f"{host.p99_ms:.2f} ms"
    fair = host.workers / record_workers
    return (
        f"host {host.name}: {host.workers} workers, {host.per_second:.1f} tx/s, p99 {p99}, "
        f"{host.share:.0%} of the commits (fair {fair:.0%})"
    )


def starved_warnings(record: MixRecord) -> list[str]:
    """A sentence per starved worker of *record*, naming it and its host."""
    found = fairness(record)
    if found is None:
        return []
    lines = []
    for worker in found.starved:
        where = f" on host {worker.host}" if worker.host else ""
        lines.append(
            f"{record.database}: {worker.name}{where} is starved: {worker.transactions} "
            f"committed transactions, {worker.share:.0%} of the commits (fair "
            f"{found.fair_share:.0%}; starved below {STARVED_SHARE:.0%} of the mean)"
        )
    return lines

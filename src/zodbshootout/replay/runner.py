"""Replay traces on every database of a configuration: the dataset, c workers, one record.

A mode on run.skeleton, as mix is (servers, refusals, failures, SIGINT and
SIGTERM, a save after every database).  For each database, in a session of
the concurrency layer: untimed, the guard and a new dataset
(:mod:`.dataset`); then c workers (:class:`.worker.ReplayTask`) replay their
share of the recorded connections, in the recorded order of their polls and
commits unless told otherwise (:mod:`.order`); their reports are merged into the record
a mix run keeps (:func:`zodbshootout.results.mix.merge_reports`, one row
per transaction kind), so that show, compare, history, plot and report read
a replay as they read a mix; the calls it issued are its ``replay`` entry.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import Any

from zodbshootout import storages
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.errors import CellError
from zodbshootout.replay import plan as p
from zodbshootout.replay.dataset import build_dataset
from zodbshootout.replay.order import Entry, ordered_entries
from zodbshootout.replay.worker import ReplayTask
from zodbshootout.results.histogram import encode, new_histogram
from zodbshootout.results.mix import merge_reports
from zodbshootout.results.record import RunResult
from zodbshootout.run.ladder import Route
from zodbshootout.run.skeleton import OnePassRunner
from zodbshootout.storages.servers import EmbeddedServers

#: The phase name failures of a replay carry, and the workload name of its records.
REPLAY = "replay"


@dataclass(frozen=True)
class ReplayOptions:
    """A replay's options (validated by the CLI) and the plan its traces made."""

    plan: p.ReplayPlan
    traces: tuple[str, ...]
    concurrency: int
    speed: float | None = None  # None: as fast as possible
    threads: bool = False
    interval_seconds: float = 1.0
    timeout_seconds: float = 300.0  # on top of the recorded span ÷ speed
    #: Polls and commits in their recorded order across workers (see .order);
    #: False: each worker replays its transactions whole, as fast as it goes.
    ordered: bool = True

    @property
    def rate_per_second(self) -> float | None:
        """Under --speed, the recorded mean rate times the speed (an open loop's rate)."""
        if self.speed is None:
            return None
        return self.plan.transactions / max(self.plan.span_ns / 1e9, 1e-3) * self.speed

    def as_metadata(self) -> dict[str, Any]:
        return {
            "workload": REPLAY,
            "description": "a recorded application's storage calls",
            "concurrency": self.concurrency,
            "mode": "threads" if self.threads else "processes",
            "rate_per_second": self.rate_per_second,
            "arrival": "recorded" if self.speed is not None else None,
            "interval_seconds": self.interval_seconds,
            "seed": None,
        }

    def replay_metadata(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "traces": list(self.traces),
            "level": "storage",
            "order": "recorded" if self.ordered else "free",
            "speed": self.speed,
            "connections": len(plan.streams),
            "transactions": plan.transactions,
            "recorded_seconds": plan.span_ns / 1e9,
            "objects": len(plan.sizes),
            "recorded": dict(plan.recorded),
            "notes": dict(plan.notes),
            "partial_tail_bytes": plan.partial_tail_bytes,
        }


def _lined_up(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each worker's intervals as many as the longest's: a worker whose connections
    ended early committed nothing in the intervals after (merge_reports keeps only
    the intervals every worker closed)."""
    longest = max((len(report["intervals"]) for report in reports), default=0)
    empty = encode(new_histogram())
    for report in reports:
        report["intervals"] += [[0, empty]] * (longest - len(report["intervals"]))
    return reports


@dataclass(frozen=True)
class _Kinds:
    name: str = REPLAY
    operations: tuple[str, ...] = p.KINDS


@dataclass(frozen=True)
class _Schedule:
    """What merge_reports reads of a plan."""

    rate_per_second: float | None
    interval_seconds: float
    workload: _Kinds = field(default_factory=_Kinds)


class ReplayRunner(OnePassRunner[ReplayOptions]):
    """Replays one plan on a configuration's databases; see the module doc."""

    phase = REPLAY

    def planned(self, config: LoadedConfig, options: ReplayOptions) -> RunResult:
        result = RunResult.one_pass(config.names, [len(options.plan.sizes)], options.concurrency)
        result.metadata["mix"] = options.as_metadata()
        result.metadata["replay"] = options.replay_metadata()
        return result

    @cached_property
    def shares(self) -> list[list[int]]:
        """The recorded connections (streams) each worker replays."""
        return p.assign(self.options.plan.streams, self.options.concurrency)

    @cached_property
    def entries(self) -> list[list[Entry]]:
        """What each worker replays: its transactions, or their pieces (ordered)."""
        plan, shares = self.options.plan, self.shares
        if self.options.ordered:
            entries, unexplained = ordered_entries(plan, shares)
            if unexplained:
                self.say(f"{unexplained} recorded polls placed by their time alone: no order "
                         "of the commits gives what they returned")  # fmt: skip
            return entries
        return [[list(entry) for entry in p.worker_transactions(plan, share)] for share in shares]

    def measure(self, servers: EmbeddedServers) -> None:
        self.measure_each(partial(self._measure, servers))

    def _measure(self, servers: EmbeddedServers, name: str) -> bool:
        for row, route in self.ladder.start(name, servers.addresses(name)).items():
            self._measure_row(name, row, route)
        return True

    def _measure_row(self, name: str, row: str, route: Route) -> None:
        options = self.options
        factory = self.config.databases[name]
        session = self.open_session(name, route, options.concurrency, options.threads)
        with contextlib.closing(session):
            sizes = options.plan.sizes
            self.say(f"{row}: writing the dataset ({len(sizes)} objects, untimed)")
            built = session.populate(partial(build_dataset, sizes=sizes))
            self.opened.update((name, row))
            storages.before_repetition(factory)
            speed = f"at {options.speed:g}x the recorded schedule" if options.speed else "flat out"
            self.say(f"{row}: {options.concurrency} workers replay {options.plan.transactions} "
                     f"transactions, {speed}")  # fmt: skip
            turns = self._turns()
            tasks = [
                self._task(name, route, worker, built, turns) for worker in range(len(self.shares))
            ]
            wait = options.timeout_seconds
            if options.speed:
                wait += options.plan.span_ns / 1e9 / options.speed
            outcome = session.run_stage(tasks, wait)
        if outcome.error is not None:
            raise CellError(outcome.error)
        reports = _lined_up(list(outcome.timings))
        schedule = _Schedule(options.rate_per_second, options.interval_seconds)
        record = merge_reports(row, reports, schedule, options.concurrency)
        record["dataset"] = {key: built[key] for key in ("written", "bytes", "raised_bytes")}
        record["dataset"]["present"] = len(options.plan.sizes)
        issued = dict.fromkeys(options.plan.recorded, 0)
        for report in reports:
            for key, count in report["issued"].items():
                issued[key] += count
        reloads = sum(report["reloads"] for report in reports)
        record["replay"] = {"issued": issued, "reloads": reloads}
        recorded = options.plan.recorded
        more = f"; {reloads} loads more, of objects another worker changed in between"
        self.say(
            f"{row}: issued {issued['loads']} loads, {issued['stores']} stores, "
            f"{issued['commits']} commits (recorded: {recorded['loads']}, "
            f"{recorded['stores']}, {recorded['commits']}){more if reloads else ''}"
        )
        # Workers replay the connections they were given, as unequal as the recording's:
        # a fairness verdict on their shares would judge the application, not the database.
        record["workers"] = []
        self.result.mix.append(record)

    def _turns(self) -> tuple[tuple[Any, ...], Any] | None:
        """An ordered replay's semaphores (one per worker) and the last commit's tid (8
        bytes), new for each stage; None with one worker or in free order."""
        if not self.options.ordered or len(self.shares) < 2:
            return None
        # Named semaphores and shared memory: they reach the forkserver's workers too.
        context = multiprocessing.get_context("forkserver")
        return tuple(context.Semaphore(0) for _ in self.shares), context.RawArray("c", 8)

    def _task(
        self,
        name: str,
        route: Route,
        worker: int,
        built: dict[str, Any],
        turns: tuple[tuple[Any, ...], Any] | None,
    ) -> ReplayTask:
        options = self.options
        share = self.shares[worker]
        return ReplayTask(
            route.source,
            name,
            tuple(route.addresses),
            worker,
            options.concurrency,
            len(share),
            self.entries[worker],
            built["oids"],
            built["serials"],
            options.speed,
            options.interval_seconds,
            options.timeout_seconds,
            *(turns or (None, None)),
        )

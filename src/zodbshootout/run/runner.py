"""Measure every database of a configuration: the cell loop.

A mode on run.skeleton (servers, set-up, hosts, failures, signals, saves).
Every database's embedded ZEO servers start first, side by side, and stay up
for the run; each database is described (dbinfo) and prepared (dbstate).
Then each object count and concurrency level measures all databases in
rounds (see rounds): a warm-up repetition each, then a repetition of each per
round.  A repetition resets the containers and runs the write and the read
stage in a session of the concurrency mode.  ``<rawkv>`` floors take part
in the same rounds (so -r, --precision and --max-time apply to them alike);
their repetition is rawkv.floor's.  A failure costs only the cells it
concerns.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from zodbshootout import concurrency, faults, storages
from zodbshootout.concurrency import session_spec
from zodbshootout.concurrency.hosts import hosts_problem
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.database import state as dbstate
from zodbshootout.database.cache_sizing import configured_cache_notes, configured_cache_sizes
from zodbshootout.network.delays import RttStep
from zodbshootout.options.run import RunOptions
from zodbshootout.phases.classic import REGISTRY, plan_stages
from zodbshootout.probes import cache_trace as cachetrace
from zodbshootout.rawkv import floor, is_rawkv
from zodbshootout.rawkv.backends import ForeignStoreError
from zodbshootout.reasons import one_line
from zodbshootout.redact import redact
from zodbshootout.results.record import Failure, Measurement, PhaseTiming, RunResult
from zodbshootout.results.rtt import classic_fits
from zodbshootout.run import noise
from zodbshootout.run.column import Column, database_column, floor_column
from zodbshootout.run.ladder import Ladder, Route
from zodbshootout.run.precision import round_rates
from zodbshootout.run.progress import ProgressCallback, ProgressEvent, ignore_progress
from zodbshootout.run.rounds import Loops, measure_in_rounds
from zodbshootout.run.skeleton import Addresses, RunnerSkeleton, describe_error
from zodbshootout.storages.servers import EmbeddedServers
from zodbshootout.workload.containers import describe_container
from zodbshootout.workload.root import ForeignDataError


class Runner(RunnerSkeleton):
    """The classic run of one configuration with one set of options; see :meth:`run`."""

    def __init__(
        self,
        config: LoadedConfig,
        options: RunOptions,
        progress: ProgressCallback = ignore_progress,
        on_database_done: Callable[[RunResult], None] | None = None,
        rtt: Sequence[RttStep] = (),
    ) -> None:
        concurrency.refuse_options(options)
        # on_database_done saves the result after each database and round.
        super().__init__(config, _empty_result(config, options), on_database_done)
        self.options = options
        self.progress = progress
        self.stages = dict(zip(("write", "read"), plan_stages(options.ordered_phases), strict=True))
        self.looped = [name for name in options.ordered_phases if REGISTRY[name].run_loops]
        #: The <rawkv> floors: measured in the same rounds, by rawkv.floor's repetition.
        self.floors = [name for name in config.names if is_rawkv(config.databases[name])]
        self.use_ladder(Ladder(config, self.served(), rtt, options.hosts))

    def run(self) -> RunResult:
        """Measure everything; on Ctrl-C or SIGTERM return what was measured, marked interrupted."""
        self.result.metadata.update(_workload_metadata(self.options))
        for note in _workload_notes(self.options):
            self.note(note)
        return super().run()

    def served(self) -> list[str]:
        return [name for name in self.config.names if name not in self.floors]

    def measure(self, servers: EmbeddedServers) -> None:
        """Every database set up first (servers up for the whole run), then level by level."""
        options = self.options
        ready = {
            name: self.set_up(name, partial(self._prepare, servers, name)) for name in self.served()
        }
        if options.hosts:
            reachable = {
                name: addresses for name, addresses in ready.items() if addresses is not None
            }
            self.describe_hosts(options.hosts, reachable, options.timeout_seconds)
        self.start_rows(ready)
        for name in self.floors:
            floor.set_up(
                name, self.config.databases[name], self.result.phases, self.result.metadata
            )
        for count in options.object_counts:
            for workers in options.concurrencies:
                self._measure_level(count, workers)

    def _prepare(self, servers: EmbeddedServers, name: str) -> Addresses:
        """Wait for *name*'s servers, describe it, prepare its state (see database.state)."""
        first = (self.options.object_counts[0], self.options.concurrencies[0])
        report = partial(self._report, name, *first, 1)
        addresses = servers.addresses(name)
        context = (self.options, self.secrets, report, self.note, self.result.metadata)
        patched = concurrency.mode_of(self.options.mode).monkey_patched
        dbstate.set_up_database(self.config, name, addresses, *context, gevent_mode=patched)
        return addresses

    def _measure_level(self, count: int, workers: int) -> None:
        """One count and concurrency level of every database and floor, in rounds (see rounds)."""
        columns = {
            row: column
            for row, route in self.routes.items()
            if row not in self.dropped
            and (column := self._database_column(row, route, count, workers))
        }
        for name in self.floors:
            if name not in self.dropped and (column := self._floor_column(name, count, workers)):
                columns[name] = column
        measured, done = measure_in_rounds(
            [name for name in self.result.databases if name in columns],
            lambda name, repetition, loops: self._repeat(columns[name], count, repetition, loops),
            self.options.stopping_rule,
            lambda names: round_rates(self.result, names, count, workers),
            self.looped,
            self.options.warmup,
            self.saved,
        )
        for name in measured:
            self._report(name, count, workers, done, "done")

    def _database_column(self, row: str, route: Route, count: int, workers: int) -> Column | None:
        """How *row* (a database or its --rtt step) is measured here; None if it can't be."""
        name = self.ladder.database_of(row)
        options, factory = self.options, self.config.databases[name]
        # E.g. worker processes can't share a FileStorage (threads can).
        reason = concurrency.mode_of(options.mode).problem(options.sharing, workers, factory)
        reason = reason or hosts_problem(options.hosts, route.addresses)
        if reason:
            self._fail(row, count, workers, self.result.phases, reason)
            return None
        spec = session_spec(route.source, name, tuple(route.addresses), options, count, workers)
        assert spec.cache_workload is not None
        for note in configured_cache_notes(self.config.source, name, spec.cache_workload):
            self.note(note)
        sizes = configured_cache_sizes(self.config.source, name, spec.cache_workload)
        described = self.result.metadata.setdefault("databases", {}).setdefault(name, {})
        described.setdefault("cache_sizes", {})[str(count)] = sizes
        # Worker 0 reads the size for bytes/object where the probe could (see storagesize).
        size = self.result.metadata["databases"][name].get("size", {})
        spec = dataclasses.replace(spec, measure_size="method" in size, setup=route.setup)
        phases = tuple(self.result.phases)
        return database_column(spec, options, count, phases, self.stages, factory, row)

    def _floor_column(self, name: str, count: int, workers: int) -> Column | None:
        """How floor *name* is measured at this level, or None (with a failure) if it can't be."""
        phases, section = list(self.result.phases), self.config.databases[name]
        processes = concurrency.mode_of(self.options.mode).worker_processes
        reason = floor.problem(section, processes, workers)
        if reason:
            self._fail(name, count, workers, floor.measured_phases(phases), reason)
            return None
        return floor_column(self.config, name, count, workers, phases, self.options)

    def _repeat(
        self, column: Column, count: int, repetition: int, loops: Loops
    ) -> list[PhaseTiming] | None:
        """One repetition (0: the warm-up); None if it failed.

        A failed stage costs the cell; an error in this process (the guard
        refusing populate, a session that can't open) costs the database.
        """
        try:
            return self._stages(column, count, repetition, loops)
        except ForeignDataError as e:
            self.refuse(column.name, e)
        except ForeignStoreError as e:
            self.result.refused.append(column.name)
            self.fail_database(column.name, str(e))
        except Exception as e:
            # Every cell of this level fails, measured in an earlier
            # repetition or not: its numbers would come from fewer samples
            # than asked, and the warm-up's from none.
            where = "the warm-up" if repetition == 0 else f"repetition {repetition}"
            reason = f"{where} failed: {describe_error(e)}"
            self._fail(column.name, count, column.workers, column.measured, reason)
            self.fail_database_for(column.name, e)
        return None

    def _stages(
        self, column: Column, count: int, repetition: int, loops: Loops
    ) -> list[PhaseTiming] | None:
        name, workers, warmup = column.name, column.workers, repetition == 0
        report = partial(self._report, name, count, workers, repetition)
        loads = noise.record_before(self.result.metadata, name)
        column.before_repetition()
        timings: list[PhaseTiming] = []
        with contextlib.closing(column.open_session()) as session:
            report("warm-up: populate" if warmup else "populate")
            faults.at_populate(self.options.fault, name, repetition)
            session.populate(column.fill)
            column.before_repetition()
            for stage, steps in column.stages.items():
                if not steps:
                    continue
                report(f"warm-up: {stage}" if warmup else stage)
                tasks = column.tasks(steps, repetition, loops)
                outcome = session.run_stage(tasks, self.options.timeout_seconds)
                if outcome.error is not None:
                    report("failed", one_line(redact(outcome.error, self.secrets)))
                    failed = column.lost(stage)
                    info = self.described(name)
                    hint = storages.failure_hint(outcome.error, info, count, workers)
                    reason = f"{stage} stage failed: {hint or outcome.error}"
                    self._fail(name, count, workers, failed, reason)
                    return None
                timings.extend(outcome.timings)
                if outcome.host_facts:
                    cell = _cell(name, count, workers, repetition)
                    self.record_host_facts(cell, outcome.host_facts)
                # Recorded per stage: a read stage that fails later does not
                # take the write stage's finished measurements with it.
                self.result.measurements.extend(
                    Measurement(name, workers, count, repetition, timing, warmup=warmup)
                    for timing in outcome.timings
                )
        loads["after"] = noise.load_average()
        return timings

    def _report(self, name: str, count: int, workers: int, repetition: int, *event: str) -> None:
        repetitions = max(self.options.repetitions, repetition)
        self.progress(ProgressEvent(name, count, workers, repetition, repetitions, *event))

    def _fail(
        self, name: str, count: int, workers: int, phases: list[str] | tuple[str, ...], reason: str
    ) -> None:
        self.result.failures.append(
            Failure(name, workers, count, tuple(phases), self.one_line(reason))
        )

    def fail_unsettled(self, name: str, reason: str) -> None:
        self.result.fail_unsettled(name, reason)

    def record_fits(self) -> None:
        self.result.metadata["rtt"]["fits"] = [fit.as_data() for fit in classic_fits(self.result)]


def _empty_result(config: LoadedConfig, options: RunOptions) -> RunResult:
    return RunResult(
        databases=config.names,
        object_counts=list(options.object_counts),
        concurrencies=list(options.concurrencies),
        phases=options.ordered_phases,
        repetitions=options.repetitions,
    )


def _cell(name: str, count: int, workers: int, repetition: int) -> dict[str, Any]:
    """A cell as the result's metadata names it (e.g. a --hosts stage's barrier skew)."""
    return {
        "database": name,
        "object_count": count,
        "concurrency": workers,
        "repetition": repetition,
    }


def _workload_metadata(options: RunOptions) -> dict[str, Any]:
    """How the workers ran and what they stored: it changes every number."""
    return {
        "concurrency_mode": concurrency.mode_of(options.mode).describe(options.sharing),
        "container": describe_container(options.btrees),
        "blobs": options.blobs,
        "stopping_rule": options.stopping_rule.as_metadata(options.warmup),
        "index_entries": options.index_entries,
        "cache_trace_dir": options.cache_trace_dir,
    }


def _workload_notes(options: RunOptions) -> list[str]:
    """What the table's rows mean under these options, when it isn't the classic meaning."""
    warm = concurrency.mode_of(options.mode).warm_note(options.sharing)
    notes = [warm] if warm else []
    if options.cache_trace_dir:
        notes.append(cachetrace.TIMING_NOTE)
    return notes

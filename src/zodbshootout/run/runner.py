"""Measure every database of a configuration: the cell loop.

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
import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from zodbshootout import concurrency, faults, storages
from zodbshootout.concurrency import session_spec, stage_tasks
from zodbshootout.concurrency.host_environment import describe_hosts, differing_hosts
from zodbshootout.concurrency.hosts import HostError, hosts_problem
from zodbshootout.concurrency.processes import run_stage_in_processes
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.database import state as dbstate
from zodbshootout.database.cache_sizing import configured_cache_notes, configured_cache_sizes
from zodbshootout.errors import CellError, UsageError
from zodbshootout.options.run import RunOptions
from zodbshootout.phases.classic import REGISTRY, phases_failed_with, plan_stages
from zodbshootout.phases.setup import repetition_filler
from zodbshootout.probes import cache_trace as cachetrace
from zodbshootout.probes.diagnostics import log_current_traceback
from zodbshootout.rawkv import floor, is_rawkv
from zodbshootout.rawkv.backends import ForeignStoreError
from zodbshootout.reasons import one_line
from zodbshootout.redact import find_secrets, redact
from zodbshootout.results.record import Failure, Measurement, PhaseTiming, RunResult
from zodbshootout.run import noise
from zodbshootout.run.column import Column
from zodbshootout.run.precision import round_rates
from zodbshootout.run.progress import ProgressCallback, ProgressEvent, ignore_progress
from zodbshootout.run.rounds import Loops, measure_in_rounds
from zodbshootout.storages.servers import EmbeddedServers, embedded_servers
from zodbshootout.workload.containers import describe_container
from zodbshootout.workload.root import ForeignDataError

_log = logging.getLogger(__name__)
Addresses = list[tuple[str, int]]


class Runner:
    """Runs one configuration with one set of options; see :meth:`run`."""

    def __init__(
        self,
        config: LoadedConfig,
        options: RunOptions,
        progress: ProgressCallback = ignore_progress,
        on_database_done: Callable[[RunResult], None] | None = None,
    ) -> None:
        concurrency.refuse_options(options)
        self.config = config
        self.options = options
        self.progress = progress
        self.on_database_done = on_database_done  # called after each database and round
        self.secrets = find_secrets(config.source.text)
        self.stages = dict(zip(("write", "read"), plan_stages(options.ordered_phases), strict=True))
        #: Databases failed as a whole (see _fail_database): their cells are settled.
        self.dropped: set[str] = set()
        self.looped = [name for name in options.ordered_phases if REGISTRY[name].run_loops]
        #: The <rawkv> floors: measured in the same rounds, by rawkv.floor's repetition.
        self.floors = [name for name in config.names if is_rawkv(config.databases[name])]
        self.result = RunResult(
            databases=config.names,
            object_counts=list(options.object_counts),
            concurrencies=list(options.concurrencies),
            phases=options.ordered_phases,
            repetitions=options.repetitions,
        )

    def run(self) -> RunResult:
        """Measure everything; on Ctrl-C return what was measured, marked interrupted."""
        metadata, options = self.result.metadata, self.options
        metadata.update(started=time.time(), **_workload_metadata(options))
        for note in _workload_notes(options):
            self._note(note)
        try:
            names = [name for name in self.config.names if name not in self.floors]
            with embedded_servers(self.config, names) as servers:
                ready = {name: self._set_up(servers, name) for name in names}
                if options.hosts:
                    self._describe_hosts(ready)
                for name in self.floors:
                    floor.set_up(name, self.config.databases[name], self.result.phases, metadata)
                for count in options.object_counts:
                    for workers in options.concurrencies:
                        self._measure_level(ready, count, workers)
        except KeyboardInterrupt:
            self.result.interrupted = True
        metadata["finished"] = time.time()
        return self.result

    def _set_up(self, servers: EmbeddedServers, name: str) -> Addresses | None:
        """Wait for *name*'s servers (up for the whole run), describe it, prepare its state."""
        first = (self.options.object_counts[0], self.options.concurrencies[0])
        report = functools.partial(self._report, name, *first, 1)
        try:
            addresses = servers.addresses(name)
            context = (self.options, self.secrets, report, self._note, self.result.metadata)
            patched = concurrency.mode_of(self.options.mode).monkey_patched
            dbstate.set_up_database(self.config, name, addresses, *context, gevent_mode=patched)
            return addresses
        except ForeignDataError as e:
            self._refuse(name, e)
        except Exception as e:
            self._fail_database_for(name, e)
        return None

    def _describe_hosts(self, ready: dict[str, Addresses | None]) -> None:
        """Record every --hosts host's environment and round trips; warn where they differ."""
        reachable = {name: addresses for name, addresses in ready.items() if addresses is not None}
        try:
            described = describe_hosts(
                self.options.hosts, self.config.source, reachable, self.options.timeout_seconds
            )
        except HostError as e:
            raise UsageError(str(e)) from None
        self.result.metadata["hosts"] = described
        self.result.metadata["barrier_skew"] = []
        for warning in differing_hosts(described):
            self._note(warning)

    def _measure_level(self, ready: dict[str, Addresses | None], count: int, workers: int) -> None:
        """One count and concurrency level of every database and floor, in rounds (see rounds)."""
        columns = {
            name: column
            for name, addresses in ready.items()
            if addresses is not None
            and name not in self.dropped
            and (column := self._database_column(name, addresses, count, workers))
        }
        for name in self.floors:
            if name not in self.dropped and (column := self._floor_column(name, count, workers)):
                columns[name] = column
        measured, done = measure_in_rounds(
            [name for name in self.config.names if name in columns],
            lambda name, repetition, loops: self._repeat(columns[name], count, repetition, loops),
            self.options.stopping_rule,
            lambda names: round_rates(self.result, names, count, workers),
            self.looped,
            self.options.warmup,
            lambda: self.on_database_done(self.result) if self.on_database_done else None,
        )
        for name in measured:
            self._report(name, count, workers, done, "done")

    def _database_column(
        self, name: str, addresses: Addresses, count: int, workers: int
    ) -> Column | None:
        """How database *name* is measured at this level; None (with a failure) if it can't be."""
        options, factory = self.options, self.config.databases[name]
        # E.g. worker processes can't share a FileStorage (threads can).
        reason = concurrency.mode_of(options.mode).problem(options.sharing, workers, factory)
        reason = reason or hosts_problem(options.hosts, addresses)
        if reason:
            self._fail(name, count, workers, self.result.phases, reason)
            return None
        spec = session_spec(self.config.source, name, tuple(addresses), options, count, workers)
        assert spec.cache_workload is not None
        for note in configured_cache_notes(self.config.source, name, spec.cache_workload):
            self._note(note)
        sizes = configured_cache_sizes(self.config.source, name, spec.cache_workload)
        described = self.result.metadata.setdefault("databases", {}).setdefault(name, {})
        described.setdefault("cache_sizes", {})[str(count)] = sizes
        # Worker 0 reads the size for bytes/object where the probe could (see storagesize).
        size = self.result.metadata["databases"][name].get("size", {})
        spec = dataclasses.replace(spec, measure_size="method" in size)
        phases, options = tuple(self.result.phases), self.options
        return Column(
            name,
            workers,
            measured=phases,
            stages=self.stages,
            open_session=functools.partial(concurrency.open_session, spec),
            fill=repetition_filler(workers, count, phases, options.btrees, options.index_entries),
            tasks=lambda steps, repetition, loops: stage_tasks(
                spec, options, count, repetition, steps, loops
            ),
            lost=lambda stage: phases_failed_with(stage, phases),
            # E.g. SQLite's stale planner statistics.
            before_repetition=functools.partial(storages.before_repetition, factory),
        )

    def _floor_column(self, name: str, count: int, workers: int) -> Column | None:
        """How floor *name* is measured at this level, or None (with a failure) if it can't be."""
        phases, section = self.result.phases, self.config.databases[name]
        processes = concurrency.mode_of(self.options.mode).worker_processes
        reason = floor.problem(section, processes, workers)
        if reason:
            self._fail(name, count, workers, floor.measured_phases(phases), reason)
            return None
        return Column(
            name,
            workers,
            measured=tuple(floor.measured_phases(phases)),
            stages=floor.stages(phases),
            open_session=lambda: floor.FloorSession(section.spec(), run_stage_in_processes),
            fill=lambda db: None,
            tasks=lambda steps, _repetition, loops: floor.stage_tasks(
                self.config, name, count, workers, steps, self.options, loops
            ),
            lost=lambda stage: floor.phases_lost(stage, phases),
        )

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
            self._refuse(column.name, e)
        except ForeignStoreError as e:
            self.result.refused.append(column.name)
            self._fail_database(column.name, str(e))
        except Exception as e:
            # Every cell of this level fails, measured in an earlier
            # repetition or not: its numbers would come from fewer samples
            # than asked, and the warm-up's from none.
            where = "the warm-up" if repetition == 0 else f"repetition {repetition}"
            reason = f"{where} failed: {_describe(e)}"
            self._fail(column.name, count, column.workers, column.measured, reason)
            self._fail_database_for(column.name, e)
        return None

    def _stages(
        self, column: Column, count: int, repetition: int, loops: Loops
    ) -> list[PhaseTiming] | None:
        name, workers, warmup = column.name, column.workers, repetition == 0
        report = functools.partial(self._report, name, count, workers, repetition)
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
                    info = self.result.metadata.get("databases", {}).get(name, {})
                    hint = storages.failure_hint(outcome.error, info, count, workers)
                    reason = f"{stage} stage failed: {hint or outcome.error}"
                    self._fail(name, count, workers, failed, reason)
                    return None
                timings.extend(outcome.timings)
                if outcome.host_facts:
                    self._record_host_facts(name, workers, count, repetition, outcome.host_facts)
                # Recorded per stage: a read stage that fails later does not
                # take the write stage's finished measurements with it.
                self.result.measurements.extend(
                    Measurement(name, workers, count, repetition, timing, warmup=warmup)
                    for timing in outcome.timings
                )
        loads["after"] = noise.load_average()
        return timings

    def _record_host_facts(
        self, name: str, workers: int, count: int, repetition: int, facts: dict[str, Any]
    ) -> None:
        """A --hosts stage's barrier skew per phase, and which host each worker ran on."""
        metadata = self.result.metadata
        cell = {
            "database": name,
            "object_count": count,
            "concurrency": workers,
            "repetition": repetition,
        }
        for skew in facts.get("barrier_skew", []):
            metadata.setdefault("barrier_skew", []).append({**cell, **skew})
        for place in facts.get("workers", {}).values():
            seen = metadata.setdefault("hosts", {}).setdefault(place["host"], {})
            where = {"hostname": place["hostname"], "net_namespace": place["net_namespace"]}
            places = seen.setdefault("worker_places", [])
            if where not in places:
                places.append(where)

    def _report(self, name: str, count: int, workers: int, repetition: int, *event: str) -> None:
        repetitions = max(self.options.repetitions, repetition)
        self.progress(ProgressEvent(name, count, workers, repetition, repetitions, *event))

    def _note(self, note: str) -> None:
        if note not in self.result.notes:
            self.result.notes.append(note)

    def _fail(
        self, name: str, count: int, workers: int, phases: list[str] | tuple[str, ...], reason: str
    ) -> None:
        reason = one_line(redact(reason, self.secrets))
        self.result.failures.append(Failure(name, workers, count, tuple(phases), reason))

    def _refuse(self, name: str, error: ForeignDataError) -> None:
        self.result.refused.append(name)
        hint = f"if you are sure its data may be erased, run again with --zap {name}"
        self._fail_database(name, f"{error}; {hint}")

    def _fail_database_for(self, name: str, error: Exception) -> None:
        """A server, driver or storage error in this process costs *name*, not the run."""
        log_current_traceback(_log, f"{name} could not be measured", self.secrets)
        self._fail_database(name, _describe(error))

    def _fail_database(self, name: str, reason: str) -> None:
        """Fail every cell of *name* not yet measured or failed; measure it no more."""
        self.dropped.add(name)
        self.result.fail_unsettled(name, one_line(redact(reason, self.secrets)))
        if self.on_database_done is not None:
            self.on_database_done(self.result)


def _describe(error: Exception) -> str:
    return str(error) if isinstance(error, CellError) else f"{type(error).__name__}: {error}"


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

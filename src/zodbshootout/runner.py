"""Measure every database of a configuration: the cell loop.

The runner starts every database's embedded ZEO servers, describes each
database (dbinfo) and prepares its state (dbstate), and keeps the servers up
for the whole run.  Then, per object count and concurrency level, it
measures the databases in rounds, so that a drift of the machine (a
background job, a warming disk) hits every column alike: first one untimed
warm-up repetition of each database (it calibrates the loops of hot,
steamin and open, see calibration), then one repetition of each database per
round, until the stopping rule (precision) says enough.  Each repetition
resets the workers' containers and runs the write and the read stage in a
session of the chosen concurrency mode.  A failure costs only the cells it
concerns; the reason is kept, one line long.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import traceback
from collections.abc import Callable

from zodbshootout import cache_sizing, calibration, concurrency, dbstate, noise, storages
from zodbshootout.concurrency import SessionSpec, stage_tasks
from zodbshootout.config import LoadedConfig, parse_source
from zodbshootout.dbinfo import probe_database
from zodbshootout.errors import CellError
from zodbshootout.options import RunOptions
from zodbshootout.phases import REGISTRY, phases_failed_with, plan_stages
from zodbshootout.precision import another_round, round_rates
from zodbshootout.progress import ProgressCallback, ProgressEvent, ignore_progress
from zodbshootout.reasons import one_line
from zodbshootout.redact import find_secrets, redact
from zodbshootout.results import Failure, Measurement, PhaseTiming, RunResult
from zodbshootout.storage import ForeignDataError
from zodbshootout.workload import describe_container
from zodbshootout.zeo_server import embedded_servers

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
        self.config = config
        self.options = options
        self.progress = progress
        self.on_database_done = on_database_done  # called after each database and round
        self.secrets = find_secrets(config.source.text)
        self.stages = dict(zip(("write", "read"), plan_stages(options.ordered_phases), strict=True))
        self.looped = [name for name in options.ordered_phases if REGISTRY[name].run_loops]
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
        metadata["started"] = time.time()
        metadata.update(
            concurrency_mode=concurrency.describe_mode(options.mode, options.threads),
            container=describe_container(options.btrees),
            blobs=options.blobs,
            stopping_rule={
                "min_repetitions": options.repetitions,
                "precision": options.precision,
                "max_time_seconds": options.max_time_seconds if options.precision else None,
                "warmup": options.warmup,
            },
        )
        if options.mode != concurrency.PROCESSES:
            self._note(concurrency.warm_note(options.mode, options.threads))
        try:
            with contextlib.ExitStack() as servers:
                ready = {}
                for name in self.config.names:
                    addresses = self._set_up(servers, name)
                    if addresses is not None:
                        ready[name] = addresses
                for count in options.object_counts:
                    for workers in options.concurrencies:
                        self._measure_level(ready, count, workers)
        except KeyboardInterrupt:
            self.result.interrupted = True
        metadata["finished"] = time.time()
        return self.result

    def _set_up(self, servers: contextlib.ExitStack, name: str) -> Addresses | None:
        """Start *name*'s servers (kept up for the run), describe it, prepare its state."""
        try:
            addresses = servers.enter_context(embedded_servers(self.config, name))
            gevent_mode = self.options.mode == concurrency.GEVENT
            info, notes = probe_database(
                self.config.source, name, addresses, self.secrets, gevent_mode
            )
            self.result.metadata.setdefault("databases", {})[name] = info
            for note in notes:
                self._note(note)
            first = (self.options.object_counts[0], self.options.concurrencies[0])
            report = functools.partial(self._report, name, *first, 1)
            filler = dbstate.prepare_database(
                self.config, name, addresses, self.options, report, self._note
            )
            if filler is not None:
                self.result.metadata.setdefault("filler_objects", {})[name] = filler
            return addresses
        except ForeignDataError as e:
            self.result.refused.append(name)
            self._fail_database(
                name, f"{e}; if you are sure its data may be erased, run again with --zap {name}"
            )
        except Exception as e:
            # A server, driver or storage error in the parent (populate, a
            # server start): it costs this database, not the whole run.
            if _log.isEnabledFor(logging.DEBUG):  # masked here: a handler may not mask
                detail = redact(traceback.format_exc(), self.secrets)
                _log.debug("%s could not be measured:\n%s", name, detail)
            self._fail_database(
                name, str(e) if isinstance(e, CellError) else f"{type(e).__name__}: {e}"
            )
        return None

    def _measure_level(self, ready: dict[str, Addresses], count: int, workers: int) -> None:
        """One count and concurrency level of every database: warm-up, then rounds."""
        specs = {name: spec for name in ready if (spec := self._spec(name, ready, count, workers))}
        loops: dict[str, tuple[tuple[str, int], ...]] = dict.fromkeys(specs, ())
        started = time.monotonic()
        if self.options.warmup:
            for name in list(specs):
                timings = self._repeat(specs, name, count, 0, ())
                if timings is not None:
                    loops[name] = calibration.loops_from_warmup(timings, self.looped)
        warmup_seconds, done = time.monotonic() - started, 0
        round_seconds: list[float] = []
        while specs and another_round(
            self.options.stopping_rule,
            done,
            round_rates(self.result, list(specs), count, workers),
            round_seconds,
            warmup_seconds,
        ):
            started, done = time.monotonic(), done + 1
            for name in list(specs):
                self._repeat(specs, name, count, done, loops[name])
            round_seconds.append(time.monotonic() - started)
            if self.on_database_done is not None:
                self.on_database_done(self.result)
        for name in specs:
            self._report(name, count, workers, done, "done")

    def _spec(
        self, name: str, ready: dict[str, Addresses], count: int, workers: int
    ) -> SessionSpec | None:
        """How *name* is measured at this level, or None (with a failure) if it can't be."""
        options = self.options
        factory = self.config.databases[name]
        # E.g. worker processes can't share a FileStorage (threads can).
        reason = concurrency.mode_problem(options.mode, options.threads, workers, factory)
        if reason:
            self._fail(name, count, workers, self.result.phases, reason)
            return None
        shared = options.mode != concurrency.PROCESSES and options.threads == concurrency.SHARED
        workload = cache_sizing.CacheWorkload(
            count, options.object_size_bytes, workers if shared else 1
        )
        # Sized on a copy of the configuration: the notes are the run's, the sizes the workers'.
        fresh = parse_source(self.config.source).databases[name]
        for note in cache_sizing.size_caches(fresh, workload):
            self._note(f"{name} (n={count}): {note}")
        source, addresses = self.config.source, tuple(ready[name])
        mode = (options.mode, options.threads)
        return SessionSpec(source, name, addresses, workers, *mode, cache_workload=workload)

    def _repeat(
        self,
        specs: dict[str, SessionSpec],
        name: str,
        count: int,
        repetition: int,
        loops: tuple[tuple[str, int], ...],
    ) -> list[PhaseTiming] | None:
        """One repetition of *name* (0: the warm-up); on a failure, drop it from *specs*."""
        spec, workers, warmup = specs[name], specs[name].concurrency, repetition == 0
        report = functools.partial(self._report, name, count, workers, repetition)
        loads = self.result.metadata.setdefault("load_average", {}).setdefault(name, {})
        loads.setdefault("before", noise.load_average())
        factory = self.config.databases[name]
        storages.before_repetition(factory)  # e.g. SQLite's stale planner statistics
        timings: list[PhaseTiming] = []
        with contextlib.closing(concurrency.open_session(spec)) as session:
            report("warm-up: populate" if warmup else "populate")
            phases = tuple(self.result.phases)
            session.populate(dbstate.repetition_filler(workers, count, phases, self.options.btrees))
            storages.before_repetition(factory)
            for stage, steps in self.stages.items():
                if not steps:
                    continue
                report(f"warm-up: {stage}" if warmup else stage)
                tasks = stage_tasks(spec, self.options, count, repetition, steps, loops)
                outcome = session.run_stage(tasks, self.options.timeout_seconds)
                if outcome.error is not None:
                    report("failed", one_line(redact(outcome.error, self.secrets)))
                    failed = phases_failed_with(stage, self.result.phases)
                    self._fail(
                        name, count, workers, failed, f"{stage} stage failed: {outcome.error}"
                    )
                    del specs[name]
                    return None
                timings.extend(outcome.timings)
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

    def _note(self, note: str) -> None:
        if note not in self.result.notes:
            self.result.notes.append(note)

    def _fail(
        self, name: str, count: int, workers: int, phases: list[str] | tuple[str, ...], reason: str
    ) -> None:
        reason = one_line(redact(reason, self.secrets))
        self.result.failures.append(Failure(name, workers, count, tuple(phases), reason))

    def _fail_database(self, name: str, reason: str) -> None:
        """Fail every cell of *name* not yet measured or failed."""
        for count in self.options.object_counts:
            for workers in self.options.concurrencies:
                left = self.result.unsettled_phases(name, count, workers)
                if left:
                    self._fail(name, count, workers, left, reason)
        if not any(m.database == name for m in self.result.measurements):
            # Nothing of it was measured: the CLI exits 2 when this is true
            # of every database (nothing could be run at all).
            self.result.setup_failed.append(name)
        if self.on_database_done is not None:
            self.on_database_done(self.result)

"""Measure every database of a configuration: the cell loop.

For each database (in file order) the runner starts its embedded ZEO
servers, describes it (dbinfo) and prepares its state (dbstate), then for
each object count, concurrency level and repetition it resets the workers'
containers, runs the write stage and the read stage in a session of the
chosen concurrency mode (zodbshootout.concurrency), and records their
timings.  A failure costs only the cells it concerns; the reason is kept.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import traceback
from collections.abc import Callable

from zodbshootout import concurrency, dbstate
from zodbshootout.concurrency import Session, SessionSpec, stage_tasks
from zodbshootout.config import LoadedConfig
from zodbshootout.dbinfo import probe_database
from zodbshootout.errors import CellError
from zodbshootout.options import RunOptions
from zodbshootout.phases import phases_failed_with, plan_stages
from zodbshootout.progress import ProgressCallback, ProgressEvent, ignore_progress
from zodbshootout.redact import find_secrets, redact
from zodbshootout.results import Failure, Measurement, PhaseTiming, RunResult
from zodbshootout.storage import ForeignDataError
from zodbshootout.workload import describe_container
from zodbshootout.zeo_server import embedded_servers

_log = logging.getLogger(__name__)


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
        self.on_database_done = on_database_done
        self.secrets = find_secrets(config.source.text)
        self.stages = dict(zip(("write", "read"), plan_stages(options.ordered_phases), strict=True))
        self.result = RunResult(
            databases=config.names,
            object_counts=list(options.object_counts),
            concurrencies=list(options.concurrencies),
            phases=options.ordered_phases,
            repetitions=options.repetitions,
        )

    def run(self) -> RunResult:
        """Measure everything; on Ctrl-C return what was measured, marked interrupted."""
        metadata = self.result.metadata
        metadata["started"] = time.time()
        metadata.update(
            concurrency_mode=concurrency.describe_mode(self.options.mode, self.options.threads),
            container=describe_container(self.options.btrees),
            blobs=self.options.blobs,
        )
        if self.options.mode != concurrency.PROCESSES:
            self._note(concurrency.warm_note(self.options.mode, self.options.threads))
        try:
            for name in self.config.names:
                self._measure_database(name)
                if self.on_database_done is not None:
                    self.on_database_done(self.result)
        except KeyboardInterrupt:
            self.result.interrupted = True
        metadata["finished"] = time.time()
        return self.result

    def _measure_database(self, name: str) -> None:
        try:
            with embedded_servers(self.config, name) as addresses:
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
                for count in self.options.object_counts:
                    for concurrency_level in self.options.concurrencies:
                        self._measure_cell(name, addresses, count, concurrency_level)
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

    def _measure_cell(
        self, name: str, addresses: list[tuple[str, int]], count: int, workers: int
    ) -> None:
        """Measure a cell, repetition after repetition, each in a session of its own."""
        options = self.options
        # E.g. worker processes can't share a FileStorage (threads can).
        reason = concurrency.mode_problem(
            options.mode, options.threads, workers, self.config.databases[name]
        )
        if reason:
            self._fail(name, count, workers, self.result.phases, reason)
            return
        source = self.config.source
        spec = SessionSpec(source, name, tuple(addresses), workers, options.mode, options.threads)
        for repetition in range(1, options.repetitions + 1):
            self._report(name, count, workers, repetition, "populate")
            with contextlib.closing(concurrency.open_session(spec)) as session:
                if not self._repeat(session, spec, count, repetition):
                    return
        self._report(name, count, workers, options.repetitions, "done")

    def _repeat(self, session: Session, spec: SessionSpec, count: int, repetition: int) -> bool:
        """One repetition of a cell in *session*; False when a stage failed."""
        name, workers = spec.database, spec.concurrency
        report = functools.partial(self._report, name, count, workers, repetition)
        phases = tuple(self.result.phases)
        session.populate(dbstate.repetition_filler(workers, count, phases, self.options.btrees))
        timings: list[PhaseTiming] = []
        for stage, steps in self.stages.items():
            if not steps:
                continue
            report(stage)
            outcome = session.run_stage(
                stage_tasks(spec, self.options, count, repetition, steps),
                self.options.timeout_seconds,
            )
            if outcome.error is not None:
                report("failed", redact(outcome.error, self.secrets))
                failed = phases_failed_with(stage, self.result.phases)
                self._fail(name, count, workers, failed, f"{stage} stage failed: {outcome.error}")
                return False
            timings.extend(outcome.timings)
            # Recorded per stage: a read stage that fails later does not
            # take the write stage's finished measurements with it.
            for timing in outcome.timings:
                self.result.measurements.append(
                    Measurement(name, workers, count, repetition, timing)
                )
        if any(t.loads for t in timings if t.phase == "steamin"):
            self._note(
                f"{name}: steamin loaded objects from the storage; the database's pickle cache "
                "(cache-size in its <zodb> section) is smaller than the object count"
            )
        return True

    def _report(self, name: str, count: int, workers: int, repetition: int, *event: str) -> None:
        self.progress(
            ProgressEvent(name, count, workers, repetition, self.options.repetitions, *event)
        )

    def _note(self, note: str) -> None:
        if note not in self.result.notes:
            self.result.notes.append(note)

    def _fail(
        self, name: str, count: int, workers: int, phases: list[str] | tuple[str, ...], reason: str
    ) -> None:
        reason = redact(" ".join(reason.split()), self.secrets)
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

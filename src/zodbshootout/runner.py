"""Measure every database of a configuration: servers, populate, stages, records.

For each database (in file order) the runner starts its embedded ZEO
servers, then for each object count, concurrency level and repetition it
resets the workers' containers, runs the write stage in c fresh worker
processes and the read stage in c other fresh processes, and records their
timings.  A failure costs only the cells it concerns; the reason is kept.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from zodbshootout import workers
from zodbshootout.config import LoadedConfig
from zodbshootout.errors import CellError
from zodbshootout.options import RunOptions
from zodbshootout.phases import READ_PHASES, WRITE_PHASES, Step, plan_stages
from zodbshootout.redact import find_secrets, redact
from zodbshootout.results import Failure, Measurement, PhaseTiming, RunResult
from zodbshootout.storage import (
    ForeignDataError,
    embedded_zeo_sections,
    open_database,
    populate,
    single_process_reason,
)
from zodbshootout.zeo_server import ServerRequest, ZEOServerProcess


@dataclass(frozen=True)
class ProgressEvent:
    """Where the run is; the CLI decides how (and whether) to show it."""

    database: str
    object_count: int
    concurrency: int
    repetition: int  # 1-based
    repetitions: int
    stage: str  # "start", "populate", "write", "read", "done", "failed"
    detail: str = ""


ProgressCallback = Callable[[ProgressEvent], None]


def _ignore(_event: ProgressEvent) -> None:
    pass


class Runner:
    """Runs one configuration with one set of options; see :meth:`run`."""

    def __init__(
        self,
        config: LoadedConfig,
        options: RunOptions,
        progress: ProgressCallback = _ignore,
        on_database_done: Callable[[RunResult], None] | None = None,
    ) -> None:
        self.config = config
        self.options = options
        self.progress = progress
        self.on_database_done = on_database_done
        self.secrets = find_secrets(config.source.text)
        self.write_steps, self.read_steps = plan_stages(options.ordered_phases)
        self.result = RunResult(
            databases=config.names,
            object_counts=list(options.object_counts),
            concurrencies=list(options.concurrencies),
            phases=options.ordered_phases,
            repetitions=options.repetitions,
        )

    def run(self) -> RunResult:
        """Measure everything; on Ctrl-C return what was measured, marked interrupted."""
        self.result.metadata["started"] = time.time()
        try:
            for name in self.config.names:
                self._measure_database(name)
                if self.on_database_done is not None:
                    self.on_database_done(self.result)
        except KeyboardInterrupt:
            self.result.interrupted = True
        self.result.metadata["finished"] = time.time()
        return self.result

    def _measure_database(self, name: str) -> None:
        factory = self.config.databases[name]
        try:
            with self._servers(name, factory) as addresses:
                for count in self.options.object_counts:
                    for concurrency in self.options.concurrencies:
                        self._measure_cells(name, addresses, count, concurrency)
        except ForeignDataError as e:
            self._fail_database(name, str(e), refused=True)
        except CellError as e:
            self._fail_database(name, str(e))

    @contextlib.contextmanager
    def _servers(self, name: str, factory: Any) -> Iterator[list[tuple[str, int]]]:
        """Start the database's embedded ZEO servers; always stop them."""
        with contextlib.ExitStack() as stack:
            addresses = []
            for index, _section in enumerate(embedded_zeo_sections(factory)):
                server = ZEOServerProcess(ServerRequest(self.config.source, name, index))
                stack.callback(server.stop)
                addresses.append(server.address)
            yield addresses

    def _measure_cells(
        self, name: str, addresses: list[tuple[str, int]], count: int, concurrency: int
    ) -> None:
        reason = single_process_reason(self.config.databases[name])
        if reason and concurrency > 1:
            self._fail(name, count, concurrency, self.result.phases, reason)
            return
        repetitions = self.options.repetitions
        for repetition in range(1, repetitions + 1):

            def report(stage: str, detail: str = "", repetition: int = repetition) -> None:
                self.progress(
                    ProgressEvent(
                        name, count, concurrency, repetition, repetitions, stage, detail
                    )
                )

            report("populate")
            self._populate(name, addresses, concurrency)
            timings: list[PhaseTiming] = []
            for stage, steps in (("write", self.write_steps), ("read", self.read_steps)):
                if not steps:
                    continue
                report(stage)
                outcome = workers.run_stage_in_processes(
                    self._tasks(name, addresses, count, concurrency, repetition, steps),
                    self.options.timeout_seconds,
                )
                if outcome.error is not None:
                    failed = self._phases_from(stage)
                    report("failed", outcome.error)
                    self._fail(name, count, concurrency, failed, outcome.error, stage=stage)
                    return
                timings.extend(outcome.timings)
            for timing in timings:
                self.result.measurements.append(
                    Measurement(name, concurrency, count, repetition, timing)
                )
            self._note_unexpected_loads(name, timings)
        self.progress(ProgressEvent(name, count, concurrency, repetitions, repetitions, "done"))

    def _phases_from(self, stage: str) -> tuple[str, ...]:
        """The selected phases a failure in *stage* leaves unmeasured."""
        affected = WRITE_PHASES + READ_PHASES if stage == "write" else READ_PHASES
        return tuple(p for p in self.result.phases if p in affected)

    def _populate(self, name: str, addresses: list[tuple[str, int]], concurrency: int) -> None:
        db = open_database(
            self.config.source, name, addresses, client_label="populate", config=None
        )
        try:
            populate(db, concurrency)
        finally:
            db.close()

    def _tasks(
        self,
        name: str,
        addresses: list[tuple[str, int]],
        count: int,
        concurrency: int,
        repetition: int,
        steps: list[Step],
    ) -> list[workers.StageTask]:
        profile_prefix = None
        if self.options.profile_dir:
            safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
            profile_prefix = (
                f"{self.options.profile_dir}/{safe}-n{count}-c{concurrency}-r{repetition}"
            )
        return [
            workers.StageTask(
                source=self.config.source,
                database=name,
                server_addresses=tuple(addresses),
                worker=worker,
                object_count=count,
                object_size_bytes=self.options.object_size_bytes,
                steps=tuple(steps),
                barrier_timeout_seconds=self.options.timeout_seconds,
                profile_prefix=profile_prefix,
            )
            for worker in range(concurrency)
        ]

    def _note_unexpected_loads(self, name: str, timings: list[PhaseTiming]) -> None:
        """Say so when steamin had to load: then it did not measure the pickle cache."""
        loaded = sum(t.loads for t in timings if t.phase == "steamin")
        note = (
            f"{name}: steamin loaded objects from the storage; the database's pickle cache "
            "(cache-size in its <zodb> section) is smaller than the object count"
        )
        if loaded and note not in self.result.notes:
            self.result.notes.append(note)

    def _fail(
        self,
        name: str,
        count: int,
        concurrency: int,
        phases: tuple[str, ...] | list[str],
        reason: str,
        stage: str | None = None,
    ) -> None:
        reason = redact(" ".join(reason.split()), self.secrets)
        if stage is not None:
            reason = f"{stage} stage failed: {reason}"
        self.result.failures.append(Failure(name, concurrency, count, tuple(phases), reason))

    def _fail_database(self, name: str, reason: str, refused: bool = False) -> None:
        """Fail every cell of *name* not yet measured or failed."""
        for count in self.options.object_counts:
            for concurrency in self.options.concurrencies:
                done = {
                    m.phase
                    for m in self.result.measurements
                    if (m.database, m.object_count, m.concurrency) == (name, count, concurrency)
                }
                failed = {
                    p
                    for f in self.result.failures
                    if (f.database, f.object_count, f.concurrency) == (name, count, concurrency)
                    for p in f.phases
                }
                left = [p for p in self.result.phases if p not in done | failed]
                if left:
                    self._fail(name, count, concurrency, left, reason)
        if refused:
            self.result.metadata.setdefault("refused", []).append(name)

"""Measure every database of a configuration: servers, populate, stages, records.

For each database (in file order) the runner starts its embedded ZEO
servers, then for each object count, concurrency level and repetition it
resets the workers' containers, runs the write stage in c fresh worker
processes and the read stage in c other fresh processes (or in threads or
greenlets: see zodbshootout.concurrency), and records their timings.  A
failure costs only the cells it concerns; the reason is kept.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from zodbshootout import benchmarks, dbstate, workers
from zodbshootout import concurrency as concurrency_modes
from zodbshootout.config import LoadedConfig
from zodbshootout.dbinfo import describe_database
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
    uses_relstorage_mysql,
)
from zodbshootout.workload import container_factory, describe_container
from zodbshootout.zeo_server import ServerRequest, ZEOServerProcess

_log = logging.getLogger(__name__)


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
        # The current repetition's workers (processes, threads or greenlets).
        self._session: concurrency_modes.Session | None = None
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
        self._record_workload()
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
                self._describe(name, addresses)
                self._prepare_state(name, addresses)
                for count in self.options.object_counts:
                    for concurrency in self.options.concurrencies:
                        self._measure_cells(name, addresses, count, concurrency)
        except ForeignDataError as e:
            self._fail_database(name, _refusal_reason(name, e), refused=True)
        except CellError as e:
            self._log_traceback(name)
            self._fail_database(name, str(e))
        except Exception as e:
            self._log_traceback(name)
            # A server, driver or storage error in the parent (populate, a
            # server start): it costs this database, not the whole run.
            self._fail_database(name, f"{type(e).__name__}: {e}")

    def _log_traceback(self, name: str) -> None:
        """For --debug: the traceback behind a failed database, passwords masked here.

        Masked before logging, not by a handler's filter, because the
        handlers that will print it (a test's, the user's --log) may have none.
        """
        if _log.isEnabledFor(logging.DEBUG):
            detail = redact(traceback.format_exc(), self.secrets)
            _log.debug("%s could not be measured:\n%s", name, detail)

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
        """Measure one cell in the options' concurrency mode; close its last session."""
        try:
            self._measure_cells_in_sessions(name, addresses, count, concurrency)
        finally:
            self._close_session()

    def _start_session(
        self, name: str, addresses: list[tuple[str, int]], concurrency: int
    ) -> concurrency_modes.Session:
        """A fresh session for the next repetition (the previous one is closed first)."""
        self._close_session()
        spec = concurrency_modes.SessionSpec(
            source=self.config.source,
            database=name,
            server_addresses=tuple(addresses),
            concurrency=concurrency,
            mode=self.options.mode,
            sharing=self.options.threads,
        )
        self._session = concurrency_modes.open_session(spec)
        return self._session

    def _close_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def _measure_cells_in_sessions(
        self, name: str, addresses: list[tuple[str, int]], count: int, concurrency: int
    ) -> None:
        # E.g. worker processes can't share a FileStorage (threads can).
        reason = concurrency_modes.mode_problem(
            self.options.mode, self.options.threads, concurrency, self.config.databases[name]
        )
        if reason:
            self._fail(name, count, concurrency, self.result.phases, reason)
            return
        repetitions = self.options.repetitions
        for repetition in range(1, repetitions + 1):

            def report(stage: str, detail: str = "", repetition: int = repetition) -> None:
                self.progress(
                    ProgressEvent(name, count, concurrency, repetition, repetitions, stage, detail)
                )

            report("populate")
            session = self._start_session(name, addresses, concurrency)
            self._populate(session, concurrency, count)
            timings: list[PhaseTiming] = []
            for stage, steps in (("write", self.write_steps), ("read", self.read_steps)):
                if not steps:
                    continue
                report(stage)
                outcome = session.run_stage(
                    self._tasks(name, addresses, count, concurrency, repetition, steps),
                    self.options.timeout_seconds,
                )
                if outcome.error is not None:
                    failed = self._phases_from(stage)
                    report("failed", redact(outcome.error, self.secrets))
                    self._fail(name, count, concurrency, failed, outcome.error, stage=stage)
                    return
                timings.extend(outcome.timings)
                # Recorded per stage: a read stage that fails later does not
                # take the write stage's finished measurements with it.
                for timing in outcome.timings:
                    self.result.measurements.append(
                        Measurement(name, concurrency, count, repetition, timing)
                    )
            self._note_unexpected_loads(name, timings)
        self.progress(ProgressEvent(name, count, concurrency, repetitions, repetitions, "done"))

    def _phases_from(self, stage: str) -> tuple[str, ...]:
        """The selected phases a failure in *stage* leaves unmeasured."""
        reads = READ_PHASES + benchmarks.BENCHMARKS
        affected = WRITE_PHASES + reads if stage == "write" else reads
        return tuple(p for p in self.result.phases if p in affected)

    def _describe(self, name: str, addresses: list[tuple[str, int]]) -> None:
        """Record what explains this database's numbers (server, driver, latency)."""
        db = open_database(self.config.source, name, addresses, client_label="probe")
        try:
            info = describe_database(db)
        finally:
            db.close()
        if "probe_error" in info:
            info["probe_error"] = redact(info["probe_error"], self.secrets)
        self.result.metadata.setdefault("databases", {})[name] = info
        self._note_mariadb_adjustments(name)
        if info.get("cache_servers"):
            self.result.notes.append(
                f"{name}: RelStorage {info.get('relstorage_version')} reads its shared cache "
                "(cache-servers) only for objects whose current transaction it learned by "
                "polling, so a fresh process's warm reads go to the database; memcached "
                "helps readers of objects that other processes change while they run"
            )
        gevent_mode = self.options.mode == concurrency_modes.GEVENT
        if str(info.get("driver", "")).startswith("gevent ") and not gevent_mode:
            self.result.notes.append(
                f"{name}: RelStorage chose its {info['driver']!r} driver (gevent is installed), "
                "which yields to gevent while not running under it; name the plain driver "
                "in the section (e.g. 'driver sqlite3') to measure that instead"
            )

    def _record_workload(self) -> None:
        """Record how the workers ran and what they stored: it changes every number."""
        options = self.options
        metadata = self.result.metadata
        metadata["concurrency_mode"] = concurrency_modes.describe_mode(
            options.mode, options.threads
        )
        metadata["container"] = describe_container(options.btrees)
        metadata["blobs"] = options.blobs
        if options.mode != concurrency_modes.PROCESSES:
            self.result.notes.append(concurrency_modes.warm_note(options.mode, options.threads))

    def _note_mariadb_adjustments(self, name: str) -> None:
        """Record, and say under the table, when RelStorage was adjusted for MariaDB."""
        if not uses_relstorage_mysql(self.config.databases[name]):
            return
        from zodbshootout import mariadb_compat

        applied = mariadb_compat.adjustments_applied()
        if applied:
            self.result.metadata["databases"][name]["mariadb_adjustments"] = applied
            if mariadb_compat.NOTE not in self.result.notes:
                self.result.notes.append(mariadb_compat.NOTE)

    def _populate(
        self, session: concurrency_modes.Session, concurrency: int, count: int = 0
    ) -> None:
        """Reset the containers where the session's workers will find them.

        The work is a picklable function: a gevent session runs it in its
        child process, where a MappingStorage's data must live.
        """
        session.populate(
            functools.partial(
                _fill,
                concurrency=concurrency,
                count=count,
                phases=tuple(self.result.phases),
                container_factory=container_factory(self.options.btrees),
            )
        )

    # -- database state (--zap, --min-objects, --pack): once per database --

    def _prepare_state(self, name: str, addresses: list[tuple[str, int]]) -> None:
        """Zap, check, fill and pack *name* as the options say, before any repetition.

        The guard runs after a zap and before anything is written, so a
        database with foreign data that was not zapped is refused untouched.
        """
        options = self.options
        zapping = name in options.zap
        if not (zapping or options.min_objects or options.pack):
            return

        def report(stage: str) -> None:
            first = (options.object_counts[0], options.concurrencies[0])
            self.progress(ProgressEvent(name, *first, 1, options.repetitions, stage))

        if zapping:
            report("zapping (--zap)")
            db = open_database(self.config.source, name, addresses, client_label="state")
            try:
                how = dbstate.zap(db)
            finally:
                db.close()
            self.result.notes.append(f"{name}: zapped before the run: {how}")
        db = open_database(self.config.source, name, addresses, client_label="state")
        try:
            dbstate.refuse_foreign_data(db)
            if options.min_objects:
                report(f"writing filler objects (--min-objects {options.min_objects})")
                populate(db, 0)  # creates the tool's root key if the database is new
                written = dbstate.ensure_filler(db, options.min_objects, options.object_size_bytes)
                self.result.metadata.setdefault("filler_objects", {})[name] = {
                    "present": dbstate.filler_count(db),
                    "written": written,
                }
            if options.pack:
                report("packing (--pack)")
                if zapping:  # the user allowed erasing everything
                    problem = dbstate.pack(db)
                else:
                    problem = dbstate.pack_own_files(db, self.config.databases[name])
                if problem:
                    self.result.notes.append(f"{name}: not packed: {problem}")
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
                leaks=self.options.leaks,
                log=self.options.log,
                blobs=self.options.blobs,
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
        if not any(m.database == name for m in self.result.measurements):
            # Nothing of it was measured: the CLI exits 2 when this is true
            # of every database (nothing could be run at all).
            self.result.metadata.setdefault("setup_failed", []).append(name)


def _refusal_reason(name: str, error: ForeignDataError) -> str:
    """The refusal, and the way out once the user has made sure the data may go."""
    return f"{error}; if you are sure its data may be erased, run again with --zap {name}"


def _fill(
    db: Any,
    concurrency: int,
    count: int,
    phases: tuple[str, ...],
    container_factory: Any,
) -> None:
    """Populate *db* for one repetition (see Runner._populate); picklable by name."""
    populate(db, concurrency, container_factory)
    benchmarks.setup(db, list(phases), concurrency, count)

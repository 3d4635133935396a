"""What every mode's runner shares: the run's frame, databases set up, hosts, failures, signals.

The classic run (run.runner.Runner) and the modes that measure each
database once (:class:`OnePassRunner`: mix, replay, maintain) are modes on
this skeleton.  It starts the configuration's embedded servers
for the run and stops them on any way out; turns SIGINT and SIGTERM into an
orderly stop that keeps what was measured, marked interrupted with the
signal's name (run.signals; docs/safety.rst); sets up each database so
that a refusal (data the tool did not write) or an error costs that
database, with one reason, never the run; describes the --hosts hosts and
records where each worker ran; and saves the result after every database
(*on_database_done*).  A mode supplies :meth:`measure` (its schedule and
tasks), :meth:`fail_unsettled` (what a failed database's cells are) and,
if it reports them apart, :meth:`warn`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import Any, Generic, TypeVar

from zodbshootout import concurrency, storages
from zodbshootout.concurrency.host_environment import describe_hosts, differing_hosts
from zodbshootout.concurrency.hosts import HostError, hosts_problem
from zodbshootout.concurrency.processes import return_freed_memory
from zodbshootout.concurrency.session import Session
from zodbshootout.config.hosts import HostSpec
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.errors import CellError, UsageError
from zodbshootout.probes.diagnostics import log_current_traceback
from zodbshootout.reasons import one_line
from zodbshootout.redact import find_secrets, install_log_redaction, redact
from zodbshootout.results.record import Failure, RunResult
from zodbshootout.run.ladder import Ladder, Route
from zodbshootout.run.signals import Terminated, interruptible, signal_name
from zodbshootout.storages.servers import EmbeddedServers, embedded_servers
from zodbshootout.workload.root import ForeignDataError

_log = logging.getLogger(__name__)
T = TypeVar("T")
#: A one-pass mode's options (MixOptions, ReplayOptions, MaintainOptions).
OptionsT = TypeVar("OptionsT")
Addresses = list[tuple[str, int]]


class RunnerSkeleton:
    """The frame of a run over a configuration's databases; see the module doc."""

    def __init__(
        self,
        config: LoadedConfig,
        result: RunResult,
        on_database_done: Callable[[RunResult], None] | None = None,
    ) -> None:
        self.config = config
        self.result = result
        self.on_database_done = on_database_done  # saves the result (-o, --save-to)
        #: When the result was last saved (time.monotonic): a soak's checkpoints count from it.
        self.saved_at = time.monotonic()
        self.secrets = find_secrets(config.source.text)
        #: Databases failed as a whole (see fail_database): measured no more.
        self.dropped: set[str] = set()
        #: The signal that interrupts the run, once one came (see run.signals).
        self.received: list[str] = []
        #: --rtt: each database's rows and their proxies (see use_ladder); none by default.
        self.ladder = Ladder(config, [])
        #: Each row measured (a database, or one step of its --rtt ladder) and what it opens.
        self.routes: dict[str, Route] = {}

    def use_ladder(self, ladder: Ladder) -> None:
        """Measure each database of *ladder* as its rows (``zeo_fs@2ms``), recorded as such.

        The result's databases become the rows, in place of their database;
        the ladder's record is the result's ``metadata["rtt"]``.
        """
        self.ladder = ladder
        if ladder.steps:
            self.result.databases = _with_others(ladder, self.result.databases)
            self.result.metadata["rtt"] = ladder.record

    def start_rows(self, ready: dict[str, Addresses | None]) -> None:
        """Each database set up (its embedded servers' addresses in *ready*): its rows' routes.

        With --rtt its proxies start and their round trips are measured
        (see run.ladder); a database they fail is failed, not the run.
        """
        for name, addresses in ready.items():
            if addresses is not None and name not in self.dropped:
                routes = self.set_up(name, partial(self.ladder.start, name, addresses))
                self.routes.update(routes or {})

    def described(self, row: str) -> dict[str, Any]:
        """What set-up found out about *row*'s database (``metadata["databases"]``)."""
        databases = self.result.metadata.get("databases", {})
        return dict(databases.get(self.ladder.database_of(row), {}))

    def rows_of(self, name: str) -> list[str]:
        """The rows a failure of *name* costs: a database's every row, or the row itself."""
        rows = self.ladder.rows.get(name)
        return [row.name for row in rows] if rows else [name]

    def record_fits(self) -> None:
        """With --rtt, after the run: the fits of the rows measured (see results.rtt)."""

    # -- what a mode supplies --

    def served(self) -> list[str]:
        """The databases whose embedded servers start for the run (default: all)."""
        return list(self.config.names)

    def measure(self, servers: EmbeddedServers) -> None:
        """Measure every database; its servers are up (*servers*)."""
        raise NotImplementedError

    def fail_unsettled(self, name: str, reason: str) -> None:
        """Record *reason* for every cell of *name* not measured yet."""
        raise NotImplementedError

    def warn(self, warning: str) -> None:
        """A warning about the run as a whole (by default a note under the table)."""
        self.note(warning)

    # -- the run --

    def run(self) -> RunResult:
        """Measure everything; on SIGINT or SIGTERM, what was measured, marked interrupted."""
        metadata = self.result.metadata
        metadata["started"] = time.time()
        # The libraries' own log records in this process (ZEO's I/O thread
        # when its server dies) come as one line, secrets masked, not a traceback;
        # none about a server that is gone, which the run reports itself.
        install_log_redaction(self.secrets, said=storages.server_lost)
        received = self.received
        try:
            with interruptible(received), embedded_servers(self.config, self.served()) as servers:
                try:
                    self.measure(servers)
                finally:
                    # The proxies stop on every way out, before the servers behind them.
                    self.ladder.stop()
        except KeyboardInterrupt as e:
            self.result.interrupted = True
            # The handler's note; else a signal that came just before it was installed.
            self.result.signal = received[0] if received else signal_name(e)
        if self.ladder.steps:
            self.record_fits()
        metadata["finished"] = time.time()
        return self.result

    def set_up(self, name: str, step: Callable[[], T]) -> T | None:
        """*step*'s value, or None when it refused or failed *name* (then measured no more)."""
        try:
            return step()
        except ForeignDataError as e:
            self.refuse(name, e)
        except Exception as e:
            self.fail_database_for(name, e)
        return None

    def measure_each(self, measure_one: Callable[[str], Any]) -> None:
        """Each database in turn, ``measure_one(name)``; the result saved after each one."""
        for name in self.config.names:
            if self.set_up(name, partial(measure_one, name)):
                self.saved()

    def saved(self) -> None:
        """The result as it stands, saved (after every database, and every round)."""
        if self.on_database_done is not None:
            self.on_database_done(self.result)
        self.saved_at = time.monotonic()
        # The workers' reports merged and the result written: hand their freed pages
        # back, or a long run's coordinator keeps a step of them per database.
        return_freed_memory()

    def note(self, note: str) -> None:
        if note not in self.result.notes:
            self.result.notes.append(note)

    def open_session(
        self, name: str, route: Route, workers: int, threads: bool, hosts: tuple[HostSpec, ...] = ()
    ) -> Session:
        """A session of *workers* on *route* (a row of *name*); a CellError where it can't be.

        Its workers are processes (on the --hosts *hosts*), or *threads*
        sharing one DB, as the classic run's --threads share.
        """
        mode = concurrency.mode_of(concurrency.THREADS if threads else concurrency.PROCESSES)
        problem = mode.problem(concurrency.SHARED, workers, self.config.databases[name])
        problem = problem or hosts_problem(hosts, route.addresses)
        if problem:
            raise CellError(problem)
        spec = concurrency.SessionSpec(
            route.source,
            name,
            tuple(route.addresses),
            workers,
            mode.name,
            hosts=hosts,
            shares_one_db=mode.shares_one_db(concurrency.SHARED),
            setup=route.setup,
        )
        return mode.open_session(spec)

    # -- hosts --

    def describe_hosts(
        self, hosts: tuple[HostSpec, ...], reachable: dict[str, Addresses], timeout: float
    ) -> None:
        """Record every --hosts host's environment and round trips; warn where they differ.

        A host that can't be reached is a usage error: nothing is measured.
        """
        try:
            described = describe_hosts(hosts, self.config.source, reachable, timeout)
        except HostError as e:
            raise UsageError(str(e)) from None
        self.result.metadata["hosts"] = described
        self.result.metadata["barrier_skew"] = []
        for warning in differing_hosts(described):
            self.warn(warning)

    def record_host_facts(self, cell: dict[str, Any], facts: dict[str, Any]) -> None:
        """A --hosts stage's barrier skew per phase of *cell*, and where each worker ran."""
        metadata = self.result.metadata
        for skew in facts.get("barrier_skew", []):
            metadata.setdefault("barrier_skew", []).append({**cell, **skew})
        for place in facts.get("workers", {}).values():
            seen = metadata.setdefault("hosts", {}).setdefault(place["host"], {})
            where = {"hostname": place["hostname"], "net_namespace": place["net_namespace"]}
            places = seen.setdefault("worker_places", [])
            if where not in places:
                places.append(where)

    # -- failures --

    def refuse(self, name: str, error: ForeignDataError) -> None:
        """*name* holds data the tool did not write: it is left untouched, with the one hint."""
        self.result.refused.append(name)
        # One hint for every mode: only the classic run has --zap.
        hint = f"if you are sure its data may be erased: zodbshootout CONFIG --zap {name}"
        self.fail_database(name, f"{error}; {hint}")

    def fail_database_for(self, name: str, error: Exception) -> None:
        """A server, driver or storage error in this process costs *name*, not the run."""
        log_current_traceback(_log, f"{name} could not be measured", self.secrets)
        self.fail_database(name, describe_error(error))

    def fail_database(self, name: str, reason: str) -> None:
        """Fail every cell of *name* not yet measured or failed; measure it no more; save.

        After a signal, the run unwinds instead: a library can report the
        interrupt as an error of its own (SQLite's progress handler turns it
        into ``OperationalError: interrupted``), which is not the database's.
        """
        if self.received:
            raise Terminated() if self.received[0] == "SIGTERM" else KeyboardInterrupt()
        self.dropped.add(name)
        for row in self.rows_of(name):
            self.dropped.add(row)
            self.fail_unsettled(row, self.one_line(reason))
        self.saved()

    def one_line(self, reason: str) -> str:
        """*reason* as a footnote: one line, no secrets."""
        return one_line(redact(reason, self.secrets))


class OnePassRunner(RunnerSkeleton, Generic[OptionsT]):
    """A mode that measures each database (or --rtt row) once: mix, replay, maintain.

    It supplies :meth:`planned` (its result before anything is measured)
    and, with --rtt, :meth:`planned_ladder`.  Its lines (progress, warnings, a
    failure once its database is open) go to *say*.  A failure costs the
    one pass's cell, with the mode's *phase*.
    """

    #: The phase its failures carry.
    phase = ""

    def __init__(
        self,
        config: LoadedConfig,
        options: OptionsT,
        say: Callable[[str], None] = lambda line: None,
        on_database_done: Callable[[RunResult], None] | None = None,
    ) -> None:
        super().__init__(config, self.planned(config, options), on_database_done)
        self.options = options
        self.say = say
        #: Databases and rows opened and guarded: a failure from then on (a server
        #: that dies while the dataset loads) is a failed database, not a set-up.
        self.opened: set[str] = set()
        self.use_ladder(self.planned_ladder(config, options))

    def planned(self, config: LoadedConfig, options: OptionsT) -> RunResult:
        """The result of the run *options* plan: its cells, what it records of them."""
        raise NotImplementedError

    def planned_ladder(self, config: LoadedConfig, options: OptionsT) -> Ladder:
        """The rows measured: by default each database, one row of its own name."""
        return Ladder(config, config.names)

    def warn(self, warning: str) -> None:
        self.say(f"warning: {warning}")

    def fail_unsettled(self, name: str, reason: str) -> None:
        result = self.result
        result.failures.append(
            Failure(name, result.concurrencies[0], result.object_counts[0], (self.phase,), reason)
        )
        if name not in self.opened:
            # Said once, at the end, as the classic run does: under the table,
            # or as the one error line when no database could be set up.
            result.setup_failed.append(name)
        else:
            self.say(f"{name}: failed: {reason}")


def _with_others(ladder: Ladder, names: list[str]) -> list[str]:
    """The result's databases: each database's rows, the others (floors) in their place."""
    ordered = []
    for name in names:
        ordered += [row.name for row in ladder.rows[name]] if name in ladder.rows else [name]
    return ordered


def describe_error(error: Exception) -> str:
    """An error's reason: a CellError's own words, anything else with its class."""
    return str(error) if isinstance(error, CellError) else f"{type(error).__name__}: {error}"

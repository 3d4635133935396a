"""Run a mix on every database of a configuration: load the dataset, start c workers, merge.

A mode on run.skeleton, as the classic run is (servers, refusals, hosts,
failures, SIGINT and SIGTERM, a save after every database).  For each
database, in a session of the concurrency layer (processes by default,
threads sharing one DB with --threads, processes on the --hosts): untimed,
the guard (a root holding anything but the tool's key is refused, as
everywhere), then the dataset, M objects in an OOBTree at
``root['zodbshootout']['mix']``, written in batches of commits and kept
between runs (only the shortfall is written, like ``--min-objects``).  Then
c workers run the workload (:class:`zodbshootout.mix.worker.MixTask`);
their reports are merged here into one plain record per database
(:func:`merge_reports`) and appended to ``RunResult.mix`` before the
untimed read-back of the objects' versions, so that an interruption there
keeps the measurement.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial
from typing import Any

from zodbshootout import concurrency, faults, storages
from zodbshootout.config.hosts import HostSpec
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.database.state import refuse_foreign_data, write_in_batches
from zodbshootout.errors import CellError
from zodbshootout.faults import Fault
from zodbshootout.mix.checkpoint import Checkpoints, partial_note, save_partial
from zodbshootout.mix.counting import counting_pass
from zodbshootout.mix.operations import MIX_KEY, MixObject, dataset_versions, new_dataset
from zodbshootout.mix.series import add_server_series, server_series
from zodbshootout.mix.stages import run_stages
from zodbshootout.mix.steady import SteadyStop
from zodbshootout.mix.worker import MixPlan
from zodbshootout.network.delays import RttStep
from zodbshootout.results import warmup
from zodbshootout.results.drift import judge
from zodbshootout.results.histogram import merge
from zodbshootout.results.mix import MixRecord, join_stages, merge_reports
from zodbshootout.results.record import RunResult
from zodbshootout.results.rtt import mix_fits
from zodbshootout.results.steady import SteadyRule
from zodbshootout.run.ladder import Ladder, Route
from zodbshootout.run.skeleton import OnePassRunner, describe_error
from zodbshootout.storages.servers import EmbeddedServers
from zodbshootout.workload.limits import objects_per_commit
from zodbshootout.workload.objects import make_payload
from zodbshootout.workload.root import ROOT_KEY, populate, untimed_connection

#: Objects written per commit while loading the dataset.
LOAD_BATCH = 10_000

#: A run this long (seconds) or longer: each progress line says the time left.
SOAK_LINE_SECONDS = 600.0

#: The phase name failures of a mix run carry.
MIX_PHASE = "mix"


@dataclass(frozen=True)
class MixOptions:
    """A mix run's options (validated by the CLI)."""

    plan: MixPlan
    concurrency: int = 2
    threads: bool = False
    timeout_seconds: float = 300.0  # on top of warm-up and duration
    hosts: tuple[HostSpec, ...] = ()  # --hosts: worker processes on these client hosts
    fault: Fault | None = None  # tests only: the load's or the read-back's fault (see faults)
    rtt: tuple[RttStep, ...] = ()  # --rtt: the ladder of added round trips (see run.ladder)
    #: --work: after the measured run, an untimed pass counts each operation's work
    #: (zodbshootout.mix.counting), in a worker process of its own.
    work: bool = False
    #: --checkpoint: seconds between saves of the intervals closed so far (None: no saves).
    checkpoint_seconds: float | None = None
    #: --restart-clients: seconds into the measured duration at which the workers stop
    #: and new worker processes start (new connections and caches); None: never.
    restart_at_seconds: float | None = None
    #: --until-steady: stop once the throughput is steady (--duration is the maximum).
    steady: SteadyRule | None = None

    def as_metadata(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "workload": plan.workload.name,
            "description": plan.workload.description,
            "weights": dict(plan.workload.weights),
            "keys": plan.workload.keys,
            "hot": list(plan.workload.hot),
            "objects": plan.objects,
            **asdict(plan.shape),
            "duration_seconds": plan.duration_seconds,
            "warmup_seconds": plan.warmup_seconds,
            "seed": plan.seed,
            "max_tries": plan.max_tries,
            "rate_per_second": plan.rate_per_second,
            "arrival": plan.arrival if plan.rate_per_second else None,
            "interval_seconds": plan.interval_seconds,
            "idle_connections": plan.idle_connections,
            "concurrency": self.concurrency,
            "mode": "threads" if self.threads else "processes",
            "hosts": {host.name: host.share for host in self.hosts},
            "work": self.work,
            "checkpoint_seconds": self.checkpoint_seconds,
            "restart_clients_at_seconds": self.restart_at_seconds,
            "until_steady": self.steady.as_data() if self.steady else None,
        }


def ensure_dataset(db: Any, objects: int, size_bytes: int) -> tuple[int, int]:
    """At least *objects* objects in the dataset; (first free key for inserts, written)."""
    with untimed_connection(db) as (conn, tm):
        tm.begin()
        top = conn.root()[ROOT_KEY]
        if MIX_KEY not in top:
            top[MIX_KEY] = new_dataset()
        tm.commit()
        tm.begin()
        tree = conn.root()[ROOT_KEY][MIX_KEY]
        missing = [key for key in range(objects) if key not in tree]
        tm.abort()
        written = write_in_batches(
            conn,
            tm,
            lambda root: root[ROOT_KEY][MIX_KEY],
            missing,
            lambda key: MixObject(make_payload(-1, key, 0, size_bytes)),
            objects_per_commit(size_bytes, LOAD_BATCH),
        )
        tm.begin()
        tree = conn.root()[ROOT_KEY][MIX_KEY]
        free = max(objects, tree.maxKey() + 1 if len(tree) else 0)
        tm.abort()
        return free, written


# What populate runs (pickled to the process it runs in: module-level functions).


def guard_database(db: Any) -> None:
    """The guard against data the tool didn't write, then the tool's root key."""
    refuse_foreign_data(db)
    populate(db, 0)


def load_dataset(shape: tuple[int, int], fault: Fault | None, name: str, db: Any) -> dict[str, int]:
    """The dataset of *shape* (objects, bytes each), untimed: what it holds, its versions."""
    faults.fire_if_due(fault, name, "populate", 0)  # tests only
    free, written = ensure_dataset(db, *shape)
    return {"present": free, "written": written, "versions": dataset_versions(db)}


def versions_added(fault: Fault | None, name: str, before: int, db: Any) -> int:
    """The object versions the database gained since *before* (the read-back)."""
    faults.fire_if_due(fault, name, "readback", 0)  # tests only
    return dataset_versions(db) - before


class MixRunner(OnePassRunner[MixOptions]):
    """Runs one mix over a configuration's databases; see :meth:`run`."""

    phase = MIX_PHASE

    def planned(self, config: LoadedConfig, options: MixOptions) -> RunResult:
        result = RunResult.one_pass(config.names, [options.plan.objects], options.concurrency)
        result.metadata["mix"] = options.as_metadata()
        return result

    def planned_ladder(self, config: LoadedConfig, options: MixOptions) -> Ladder:
        return Ladder(config, config.names, options.rtt, options.hosts)

    def measure(self, servers: EmbeddedServers) -> None:
        """Every database in turn, saved after each."""
        if self.options.hosts:
            self.result.metadata["mix_workers"] = {}
            reachable = {}
            for name in self.config.names:
                with contextlib.suppress(Exception):  # its own failure comes when it is measured
                    reachable[name] = servers.addresses(name)
            self.describe_hosts(self.options.hosts, reachable, self.options.timeout_seconds)
        self.measure_each(partial(self.measure_database, servers))

    def record_fits(self) -> None:
        self.result.metadata["rtt"]["fits"] = [fit.as_data() for fit in mix_fits(self.result)]

    def measure_database(self, servers: EmbeddedServers, name: str) -> bool:
        """Each row of database *name* (itself, or each --rtt step): True when all measured.

        An error is the database's: its rows not measured yet fail with it.  Public:
        maintain's pack under load runs it as its foreground, on servers already up.
        """
        routes = self.ladder.start(name, servers.addresses(name))
        for row, route in routes.items():
            self._measure_row(name, row, route)
            if len(routes) > 1:
                self.saved()
        return True

    def _measure_row(self, name: str, row: str, route: Route) -> None:
        """Load, run, merge, read back *row*, whose workers open *route*."""
        options = self.options
        factory = self.config.databases[name]
        session = self.open_session(
            name, route, options.concurrency, options.threads, options.hosts
        )
        with contextlib.closing(session):
            session.populate(guard_database)
            self.opened.update((name, row))
            # The guard's close left SQLite planner statistics of a database with
            # one object: loading 100,000 under them scanned the table per object.
            storages.before_repetition(factory)
            self.say(f"{row}: loading the dataset ({options.plan.objects} objects, untimed)")
            shape = options.plan.objects, options.plan.shape.object_size_bytes
            loaded = session.populate(partial(load_dataset, shape, options.fault, name))
            # As the classic run does after populate: the loader's close left
            # SQLite planner statistics that make RelStorage's conflict check
            # scan every object at each commit (storages.relstorage.sqlite_planner).
            storages.before_repetition(factory)
            plan = replace(options.plan, insert_base=loaded["present"])
            record, lost = self._run(session, name, row, route, plan)
            record["dataset"] = {"present": loaded["present"], "written": loaded["written"]}
            # Kept before the read-back: an interruption there keeps the measurement.
            self.result.mix.append(record)
            if lost:
                raise CellError(f"its server was lost while measuring: {lost[0]}")
            if options.work:
                self.say(f"{row}: counting each operation's work (untimed)")
                where = (route.source, name, tuple(route.addresses))
                record.update(counting_pass(session, where, plan, options.timeout_seconds))
            # Untimed: does the database hold exactly the changes the workers committed?
            self.say(f"{row}: reading every object's version back (untimed)")
            before = loaded["versions"]
            try:
                found = session.populate(partial(versions_added, options.fault, name, before))
            except Exception as e:
                raise CellError(f"the read-back failed: {describe_error(e)}") from e
            record["changes_found"] = found

    def _run(
        self, session: concurrency.Session, name: str, row: str, route: Route, plan: MixPlan
    ) -> tuple[dict[str, Any], list[str]]:
        """The workers' reports merged into the database's record; why servers were lost.

        With --restart-clients, two stages of new worker processes: the first
        until the restart, the second (no warm-up) for the rest of the
        duration; each worker's two reports are joined into one.
        """
        options = self.options
        where = f" on {', '.join(h.name for h in options.hosts)}" if options.hosts else ""
        self.say(
            f"{row}: {options.concurrency} workers{where}: warm-up {plan.warmup_seconds:g} s, "
            f"then {plan.duration_seconds:g} s of {plan.workload.name}"
        )
        checkpoints = Checkpoints(
            row, plan.workload.name, options.concurrency, plan.interval_seconds,
            options.checkpoint_seconds, partial(save_partial, self),
            since=self.saved_at,  # one cadence across the databases
        )  # fmt: skip
        lines, plan = _watch(row, plan, options, self.say, checkpoints)
        direct = list(route.setup[1] if route.setup else route.addresses)
        try:
            with server_series(self.config, name, direct, plan.interval_seconds) as sampling:
                stage_reports, host_facts = run_stages(
                    session, name, route, plan, self.options, lines
                )
        except KeyboardInterrupt:
            # Ctrl-C or SIGTERM after a checkpoint: the result saved on the way
            # out keeps the intervals closed so far, as the checkpoints did.
            if checkpoints.saves:
                self.result.mix.append(checkpoints.record())
                self.result.metadata["partial"] = partial_note(checkpoints.record())
            raise
        finally:
            if lines.steady is not None:
                lines.steady.close()
        reports = stage_reports[0]
        starts = [warmup.startup(stage) for stage in stage_reports]  # before they are joined
        restarted = None
        if len(stage_reports) > 1:
            reports, restarted = join_stages(stage_reports[0], stage_reports[1])
        record = merge_reports(row, reports, plan, options.concurrency)
        add_server_series(record, sampling)
        if restarted is not None:
            record["restart"] = restarted
        _verdicts(record, lines.steady, starts, plan)
        lost = [report["server_lost"] for report in reports if report.get("server_lost")]
        if host_facts:
            cell = {"database": row, "object_count": plan.objects}
            cell.update(concurrency=options.concurrency, repetition=1)
            self.record_host_facts(cell, host_facts)
            places = host_facts.get("workers", {})
            self.result.metadata["mix_workers"][row] = places
            for entry in record["workers"]:  # each worker's share beside its host
                entry["host"] = places.get(str(entry["worker"]), {}).get("host")
        return record, lost


def _watch(
    row: str,
    plan: MixPlan,
    options: MixOptions,
    say: Callable[[str], None],
    checkpoints: Checkpoints,
) -> tuple[_IntervalLines, MixPlan]:
    """The run's live interval lines (a soak's with the time left, --until-steady's
    watch), and the plan its workers get (with --until-steady: the stop file)."""
    lines = _IntervalLines(row, options.concurrency, plan.interval_seconds, say, checkpoints)
    if plan.duration_seconds >= SOAK_LINE_SECONDS:
        lines.total_intervals = round(plan.duration_seconds / plan.interval_seconds)
    if options.steady is not None:
        lines.steady = SteadyStop(options.steady, plan.interval_seconds, say, row)
        plan = replace(plan, stop_file=lines.steady.stop_file)
    return lines, plan


def _verdicts(
    record: dict[str, Any], steady: SteadyStop | None, starts: list[Any], plan: MixPlan
) -> None:
    """Into *record*: --until-steady's outcome, the drift verdicts, the warm-up curves."""
    if steady is not None:
        record["steady"] = steady.outcome()
    judge(record)
    record["startup"] = starts
    found = warmup.curves(MixRecord.from_data(record), starts)
    # The first start is a warm-up curve only when no untimed warm-up hid it.
    record["warmup"] = [c for c in found if c["stage"] or not plan.warmup_seconds]


class _IntervalLines:
    """Live per-interval lines: when every worker has closed interval i, one line for it."""

    def __init__(
        self,
        name: str,
        workers: int,
        interval_seconds: float,
        say: Callable[[str], None],
        checkpoints: Checkpoints | None = None,
    ) -> None:
        self.name = name
        self.checkpoints = checkpoints  # takes each interval every worker closed
        self.steady: SteadyStop | None = None  # --until-steady's watch
        self.offset = 0  # intervals of the stages before (--restart-clients)
        #: A soak (SOAK_LINE_SECONDS or more): the run's intervals, for the time left.
        self.total_intervals: int | None = None
        self.workers = workers
        self.interval_seconds = interval_seconds
        self.say = say
        self._pending: dict[int, list[tuple[int, str]]] = {}
        self._lock = threading.Lock()  # the session's progress thread, or the coordinator's
        self._union: Any = None  # each interval's line merged into the same histogram
        self._line_lock = threading.Lock()

    def take(self, message: Any) -> None:
        """One worker's closed interval: ("interval", worker, index, transactions, histogram)."""
        _kind, _worker, index, transactions, histogram = message
        with self._lock:
            entries = self._pending.setdefault(index, [])
            entries.append((transactions, histogram))
            if len(entries) < self.workers:
                return
            del self._pending[index]
        if self.checkpoints is not None:
            self.checkpoints.closed(index, entries)
        with self._line_lock:  # one union histogram, reused
            line = self._line(self.offset + index, entries)
        self.say(line)
        if self.steady is not None:
            self.steady.closed(sum(count for count, _h in entries))

    def next_stage(self) -> None:
        """New workers start (--restart-clients): their interval 0 follows the last closed."""
        with self._lock:
            self._pending.clear()  # an interval some old worker never closed: never complete
            if self.checkpoints is not None:
                self.checkpoints.next_stage()
                self.offset = len(self.checkpoints.intervals)

    def _line(self, index: int, entries: list[tuple[int, str]]) -> str:
        transactions = sum(count for count, _h in entries)
        self._union = union = merge([h for _c, h in entries], self._union)
        seconds = (index + 1) * self.interval_seconds
        p99 = union.get_value_at_percentile(99.0) / 1000 if transactions else 0.0
        rate = transactions / self.interval_seconds
        # A fractional --interval gets a decimal: 1.5 and 2.0 are not both "2 s".
        digits = 0 if float(self.interval_seconds).is_integer() else 1
        line = f"{self.name}: {seconds:5.{digits}f} s: {rate:9.0f} tx/s, p99 {p99:8.2f} ms"
        if self.total_intervals is not None:
            left = max(0, self.total_intervals - index - 1) * self.interval_seconds
            minutes, secs = divmod(round(left), 60)
            hours, minutes = divmod(minutes, 60)
            line += f", {hours}:{minutes:02d}:{secs:02d} left"
        return line

"""Run a mix on every database of a configuration: load the dataset, start c workers, merge.

For each database, in the runner's process and untimed: the guard (a root
holding anything but the tool's key is refused, as everywhere), then the
dataset, M objects in an OOBTree at ``root['zodbshootout']['mix']``, written
in batches of commits and kept between runs (only the shortfall is
written, like ``--min-objects``).  Then c workers (processes by default,
threads with --threads, sharing one DB, or processes on the --hosts
through the classic run's coordinator, concurrency.hosts) run the workload
(see :mod:`zodbshootout.mix.worker`); their reports are merged here into
one plain record per database (:func:`merge_reports`), appended to
``RunResult.mix`` and saved after every database.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any, cast

import transaction

from zodbshootout import concurrency
from zodbshootout.concurrency.host_environment import describe_hosts, differing_hosts
from zodbshootout.concurrency.hosts import hosts_problem, run_stage_on_hosts
from zodbshootout.concurrency.processes import _process_context, run_stage_in_processes
from zodbshootout.concurrency.worker import StageTask
from zodbshootout.config.hosts import HostSpec
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.database.open import open_database
from zodbshootout.database.state import refuse_foreign_data, write_in_batches
from zodbshootout.errors import CellError
from zodbshootout.mix.operations import MIX_KEY, MixObject, dataset_versions, new_dataset
from zodbshootout.mix.worker import MixPlan, MixTask
from zodbshootout.reasons import one_line
from zodbshootout.redact import find_secrets, redact
from zodbshootout.results.histogram import merge
from zodbshootout.results.mix import merge_reports
from zodbshootout.results.record import Failure, RunResult
from zodbshootout.storages.servers import embedded_servers
from zodbshootout.workload.limits import objects_per_commit
from zodbshootout.workload.objects import make_payload
from zodbshootout.workload.root import ROOT_KEY, ForeignDataError, populate

#: Objects written per commit while loading the dataset.
LOAD_BATCH = 10_000

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
            "concurrency": self.concurrency,
            "mode": "threads" if self.threads else "processes",
            "hosts": {host.name: host.share for host in self.hosts},
        }


def ensure_dataset(db: Any, objects: int, size_bytes: int) -> tuple[int, int]:
    """At least *objects* objects in the dataset; (first free key for inserts, written)."""
    tm = transaction.TransactionManager(explicit=True)
    conn = db.open(transaction_manager=tm)
    try:
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
    except BaseException:
        tm.abort()
        raise
    finally:
        conn.close()


class MixRunner:
    """Runs one mix over a configuration's databases; see :meth:`run`."""

    def __init__(
        self,
        config: LoadedConfig,
        options: MixOptions,
        say: Callable[[str], None] = lambda line: None,
        on_database_done: Callable[[RunResult], None] | None = None,
    ) -> None:
        self.config = config
        self.options = options
        self.say = say
        self.on_database_done = on_database_done
        self.secrets = find_secrets(config.source.text)
        self.result = RunResult(
            databases=config.names,
            object_counts=[options.plan.objects],
            concurrencies=[options.concurrency],
            phases=[],
            repetitions=1,
        )
        self.result.metadata["mix"] = options.as_metadata()

    def run(self) -> RunResult:
        """Every database in turn; on Ctrl-C, what was measured, marked interrupted."""
        self.result.metadata["started"] = time.time()
        try:
            with embedded_servers(self.config, self.config.names) as servers:
                if self.options.hosts:
                    self._describe_hosts(servers)
                for name in self.config.names:
                    try:
                        self._measure(name, servers.addresses(name))
                    except ForeignDataError as e:
                        self.result.refused.append(name)
                        self._fail(
                            name,
                            f"{e}; if you are sure its data may be erased, run "
                            f"'zodbshootout {self.config.source.path} --zap {name}' once",
                        )
                    except Exception as e:
                        reason = str(e) if isinstance(e, CellError) else f"{type(e).__name__}: {e}"
                        self._fail(name, reason)
                    if self.on_database_done is not None:
                        self.on_database_done(self.result)
        except KeyboardInterrupt:
            self.result.interrupted = True
        self.result.metadata["finished"] = time.time()
        return self.result

    def _describe_hosts(self, servers: Any) -> None:
        """Every --hosts host's environment and round trips, as a classic run records them.

        A host that can't be reached is a HostError (the command's one line, exit 2).
        """
        reachable = {}
        for name in self.config.names:
            try:
                reachable[name] = servers.addresses(name)
            except Exception:
                pass  # the database's own failure comes when it is measured
        options = self.options
        described = describe_hosts(
            options.hosts, self.config.source, reachable, options.timeout_seconds
        )
        self.result.metadata["hosts"] = described
        self.result.metadata["barrier_skew"] = []
        self.result.metadata["mix_workers"] = {}
        for warning in differing_hosts(described):
            self.say(f"warning: {warning}")

    def _fail(self, name: str, reason: str) -> None:
        reason = one_line(redact(reason, self.secrets))
        self.say(f"{name}: failed: {reason}")
        options = self.options
        self.result.failures.append(
            Failure(name, options.concurrency, options.plan.objects, (MIX_PHASE,), reason)
        )
        if not any(record["database"] == name for record in self.result.mix):
            self.result.setup_failed.append(name)

    def _measure(self, name: str, addresses: list[tuple[str, int]]) -> None:
        options, plan = self.options, self.options.plan
        factory = self.config.databases[name]
        mode = concurrency.THREADS if options.threads else concurrency.PROCESSES
        problem = concurrency.mode_problem(mode, "shared", options.concurrency, factory)
        problem = problem or hosts_problem(options.hosts, addresses)
        if problem:
            raise CellError(problem)
        db = open_database(self.config.source, name, addresses, client_label="mix-load")
        progress: _Progress | None = None
        host_facts: dict[str, Any] = {}
        try:
            refuse_foreign_data(db)
            populate(db, 0)  # the tool's root key, in a new database
            self.say(f"{name}: loading the dataset ({plan.objects} objects, untimed)")
            free, written = ensure_dataset(db, plan.objects, plan.shape.object_size_bytes)
            plan = replace(plan, insert_base=free)
            versions_before = dataset_versions(db)
            hosts = ", ".join(host.name for host in options.hosts)
            where = f" on {hosts}" if hosts else ""
            self.say(
                f"{name}: {options.concurrency} workers{where}: warm-up {plan.warmup_seconds:g} s, "
                f"then {plan.duration_seconds:g} s of {plan.workload.name}"
            )
            tasks, progress = self._tasks(name, addresses, plan)
            if options.threads:
                reports = _run_threads(tasks, db, self._wait_seconds(plan))
            elif options.hosts:
                reports, host_facts = self._run_on_hosts(tasks, progress)
            else:
                reports = self._run_processes(tasks)
            # Untimed: does the database hold exactly the changes the workers committed?
            self.say(f"{name}: reading every object's version back (untimed)")
            changes = dataset_versions(db) - versions_before
        finally:
            db.close()
            if progress is not None:
                progress.stop()
        record = merge_reports(name, reports, plan, options.concurrency)
        record["dataset"] = {"present": free, "written": written}
        record["changes_found"] = changes
        if host_facts:
            self._record_host_facts(name, host_facts)
        self.result.mix.append(record)

    def _record_host_facts(self, name: str, facts: dict[str, Any]) -> None:
        """Where each worker ran and the measurement barrier's skew, as a classic run's."""
        metadata, options = self.result.metadata, self.options
        cell = {
            "database": name,
            "object_count": options.plan.objects,
            "concurrency": options.concurrency,
            "repetition": 1,
        }
        for skew in facts.get("barrier_skew", []):
            metadata.setdefault("barrier_skew", []).append({**cell, **skew})
        workers = facts.get("workers", {})
        metadata.setdefault("mix_workers", {})[name] = workers
        for place in workers.values():
            seen = metadata.setdefault("hosts", {}).setdefault(place["host"], {})
            where = {"hostname": place["hostname"], "net_namespace": place["net_namespace"]}
            places = seen.setdefault("worker_places", [])
            if where not in places:
                places.append(where)

    def _tasks(
        self, name: str, addresses: list[tuple[str, int]], plan: MixPlan
    ) -> tuple[list[MixTask], _Progress]:
        options = self.options
        # Threads and hosts' workers hand their messages to this process directly.
        local = options.threads or options.hosts
        channel: Any = queue.Queue() if local else _process_context().Queue()
        progress = _Progress(channel, name, options.concurrency, plan.interval_seconds, self.say)
        tasks = [
            MixTask(
                self.config.source,
                name,
                tuple(addresses),
                worker,
                options.concurrency,
                plan,
                options.timeout_seconds,
                progress=channel,
                count_loads=worker == 0 or not options.threads,
            )
            for worker in range(options.concurrency)
        ]
        return tasks, progress

    def _wait_seconds(self, plan: MixPlan) -> float:
        return plan.warmup_seconds + plan.duration_seconds + self.options.timeout_seconds

    def _run_on_hosts(
        self, tasks: list[MixTask], progress: _Progress
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The workers on the --hosts (the classic run's coordinator); reports and host facts."""
        outcome = run_stage_on_hosts(
            tasks,
            self.options.hosts,
            self._wait_seconds(tasks[0].plan),
            on_progress=progress.channel.put,
        )
        if outcome.error is not None:
            raise CellError(outcome.error)
        return cast(list[dict[str, Any]], outcome.timings), outcome.host_facts

    def _run_processes(self, tasks: list[MixTask]) -> list[dict[str, Any]]:
        # The process session runs a task that runs itself (as rawkv's stages do).
        outcome = run_stage_in_processes(
            cast(list[StageTask], tasks), self._wait_seconds(tasks[0].plan)
        )
        if outcome.error is not None:
            raise CellError(outcome.error)
        return cast(list[dict[str, Any]], outcome.timings)


def _run_threads(tasks: list[MixTask], db: Any, wait_seconds: float) -> list[dict[str, Any]]:
    """The workers as threads of this process, sharing *db*."""
    barrier = threading.Barrier(len(tasks))
    reports: list[dict[str, Any]] = []
    errors: list[str] = []

    def work(task: MixTask) -> None:
        try:
            reports.extend(task.execute(barrier, db))
        except threading.BrokenBarrierError:
            pass
        except Exception as e:
            errors.append(f"worker {task.worker}: {type(e).__name__}: {e}")
            barrier.abort()

    threads = [threading.Thread(target=work, args=(task,), daemon=True) for task in tasks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(wait_seconds)
    if errors or len(reports) != len(tasks):
        barrier.abort()
        raise CellError(errors[0] if errors else "a worker thread did not finish in time")
    return reports


class _Progress:
    """Live per-interval lines: when every worker has closed interval i, one line for it."""

    def __init__(
        self,
        channel: Any,
        name: str,
        workers: int,
        interval_seconds: float,
        say: Callable[[str], None],
    ) -> None:
        self.channel = channel
        self.name = name
        self.workers = workers
        self.interval_seconds = interval_seconds
        self.say = say
        self._pending: dict[int, list[tuple[int, str]]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True, name="mix-progress")
        self._thread.start()

    def _follow(self) -> None:
        while not self._stop.is_set():
            try:
                message = self.channel.get(timeout=0.2)
            except queue.Empty:
                continue
            except (EOFError, OSError, ValueError):
                return
            _kind, _worker, index, transactions, histogram = message
            entries = self._pending.setdefault(index, [])
            entries.append((transactions, histogram))
            if len(entries) == self.workers:
                del self._pending[index]
                self.say(self._line(index, entries))

    def _line(self, index: int, entries: list[tuple[int, str]]) -> str:
        transactions = sum(count for count, _h in entries)
        union = merge([h for _c, h in entries])
        seconds = (index + 1) * self.interval_seconds
        p99 = union.get_value_at_percentile(99.0) / 1000 if transactions else 0.0
        rate = transactions / self.interval_seconds
        # A fractional --interval gets a decimal: 1.5 and 2.0 are not both "2 s".
        digits = 0 if float(self.interval_seconds).is_integer() else 1
        return f"{self.name}: {seconds:5.{digits}f} s: {rate:9.0f} tx/s, p99 {p99:8.2f} ms"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        close = getattr(self.channel, "close", None)
        if close is not None:
            close()

"""``--hosts``: each stage's workers as fresh interpreters on several client hosts.

The launcher for other hosts.  execnet starts every worker as a gateway of
its own (``ssh=HOST//python=PATH``, or ``popen`` for ``localhost``), so
each stage gets fresh processes on each host, as the processes mode does
locally; the worker runs concurrency.host_worker there.  This process is
the coordinator: it holds the ready/go barrier across all hosts (a worker
sends "ready"; when every worker has, each gets "go"), the stage's
deadline, and the workers' replies.  A task is any task of
concurrency.task (a classic stage, a mix worker), sent as plain data; a
worker may also send ``("progress", message)`` while it runs, which the
coordinator hands to the caller's *on_progress* as it arrives.

Honest aggregation: each worker reports the wall-clock time at which each
barrier released it; with its clock's offset (estimated from a few round
trips before the stage) those times give the release skew of every timed
phase, which the runner records.  A worker that dies or fails aborts the
barrier for the others and fails the stage with one line naming its host;
nothing outlives the stage: each worker exits when its *lifeline* channel
closes, and the gateways' local processes are stopped by PID.
"""

from __future__ import annotations

import dataclasses
import queue
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from zodbshootout.concurrency import host_worker
from zodbshootout.concurrency.processes import ProcessSession, exit_code_text
from zodbshootout.concurrency.task import OnProgress, StageOutcome, Task, encode_task
from zodbshootout.config.hosts import HostSpec, assign_hosts

#: Round trips to estimate a worker's clock offset; the fastest one counts.
CLOCK_PINGS = 5
#: Seconds the gateways get to end by themselves before their processes are killed.
EXIT_GRACE_SECONDS = 3.0
_CLOSED = ("closed",)  # what a worker's channel delivers when it closes


class HostError(Exception):
    """A host could not be reached or could not run a worker."""


@dataclass
class RemoteWorker:
    """One worker gateway of a stage, and what the coordinator knows about it."""

    task: Task
    host: HostSpec
    gateway: Any
    channel: Any
    lifeline: Any
    place: dict[str, Any]
    clock_offset_seconds: float = 0.0  # its time.time() minus ours
    clock_rtt_seconds: float = 0.0
    releases: list[float] = dataclasses.field(default_factory=list)
    done: bool = False

    @property
    def name(self) -> str:
        return f"worker {self.task.worker} on host {self.host.name}"


def load_execnet() -> Any:
    try:
        import execnet  # lazy: only --hosts needs it (the hosts extra)
    except ImportError:
        raise HostError("--hosts needs execnet: pip install 'zodbshootout[hosts]'") from None
    return execnet


def start_worker(group: Any, host: HostSpec, task: Task, timeout: float) -> RemoteWorker:
    """A fresh interpreter on *host* that has received *task* and synchronised its clock."""
    execnet = load_execnet()
    try:
        gateway = group.makegateway(host.gateway_spec())
    except (OSError, EOFError, execnet.HostNotFound) as e:
        raise unreachable(host, e) from None
    try:
        channel = gateway.remote_exec(host_worker)
        lifeline = gateway.newchannel()
        channel.send(("task", lifeline, encode_task(task)))
        hello = channel.receive(timeout)
        worker = RemoteWorker(task, host, gateway, channel, lifeline, hello[1])
        best = None
        for _ in range(CLOCK_PINGS):
            sent = time.time()
            channel.send(("clock",))
            theirs = channel.receive(timeout)[1]
            back = time.time()
            if best is None or back - sent < best[0]:
                best = (back - sent, theirs - (sent + back) / 2)
        assert best is not None
        worker.clock_rtt_seconds, worker.clock_offset_seconds = best
    except (OSError, EOFError, execnet.RemoteError, execnet.TimeoutError) as e:
        why = _first(e)
        raise HostError(f"host {host.name}: worker {task.worker} did not start: {why}") from None
    return worker


def unreachable(host: HostSpec, error: BaseException) -> HostError:
    """The one line that says a host's interpreter could not be started, and what to check."""
    python = host.python or sys.executable
    if host.is_local:
        return HostError(f"host localhost: could not start {python}: {_first(error)}")
    return HostError(
        f"host {host.name}: could not start {python} there over ssh ({type(error).__name__}); "
        f"check that 'ssh {host.name} {python} -V' works without a password prompt"
    )


def _first(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[-1] if text else type(error).__name__


def run_stage_on_hosts(
    tasks: Sequence[Task],
    hosts: tuple[HostSpec, ...],
    timeout_seconds: float,
    on_progress: OnProgress | None = None,
) -> StageOutcome:
    """Run one worker per task on its host (see assign_hosts); wait at most *timeout_seconds*.

    *on_progress* gets each ``("progress", message)``'s message, in the
    coordinator's thread, as it arrives.
    """
    group = load_execnet().Group()
    deadline = time.monotonic() + timeout_seconds
    workers: list[RemoteWorker] = []
    outcome = StageOutcome()
    try:
        started = _start_all(group, tasks, hosts, timeout_seconds, workers)
        if started is not None:
            outcome.error = started
            return outcome
        Coordinator(workers, deadline, timeout_seconds, on_progress).run(outcome)
    finally:
        _stop_all(group, workers)
    return outcome


def _start_all(
    group: Any,
    tasks: Sequence[Task],
    hosts: tuple[HostSpec, ...],
    timeout_seconds: float,
    workers: list[RemoteWorker],
) -> str | None:
    """Start every worker at once into *workers*; why not, or None when all started."""
    assigned = assign_hosts(hosts, len(tasks))
    with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        futures = [
            pool.submit(start_worker, group, host, task, timeout_seconds)
            for host, task in zip(assigned, tasks, strict=True)
        ]
        problems = []
        for future in futures:
            try:
                workers.append(future.result())
            except HostError as e:
                problems.append(str(e))
    return problems[0] if problems else None


class Coordinator:
    """The stage's ready/go barrier across hosts, its deadline and the workers' replies."""

    def __init__(
        self,
        workers: list[RemoteWorker],
        deadline: float,
        timeout: float,
        on_progress: OnProgress | None = None,
    ) -> None:
        self.workers = workers
        self.on_progress = on_progress
        self.deadline = deadline
        self.timeout = timeout
        self.inbox: queue.Queue[tuple[int, Any]] = queue.Queue()
        self.waiting: set[int] = set()
        self.broken = False
        self.errors: list[str] = []
        self.secondary: list[str] = []

    def run(self, outcome: StageOutcome) -> None:
        for index, worker in enumerate(self.workers):
            worker.channel.setcallback(_sender(self.inbox, index), endmarker=_CLOSED)
            self._send_to({index}, ("begin",))
        # A worker that failed or died ends the stage at once: the others, maybe
        # in the middle of a long timed phase, are ended by their lifelines.
        while not self.errors and not all(worker.done for worker in self.workers):
            remaining = self.deadline - time.monotonic()
            try:
                index, message = self.inbox.get(timeout=max(remaining, 0))
            except queue.Empty:
                late = [w.host.name for w in self.workers if not w.done]
                self.errors.append(
                    f"timed out: a worker on host {late[0]} did not finish within "
                    f"{self.timeout:g} s (raise --timeout for very large runs)"
                )
                break
            self._take(self.workers[index], index, message, outcome)
        if self.errors or self.secondary:
            outcome.error = (self.errors or self.secondary)[0]
            outcome.timings = []
        else:
            outcome.host_facts = stage_facts(self.workers)

    def _take(self, worker: RemoteWorker, index: int, message: Any, outcome: StageOutcome) -> None:
        kind = message[0]
        if kind == "ready":
            self.waiting.add(index)
            self._release_if_all_ready()
            return
        if kind == "abort":
            self._break()
            return
        if kind == "progress":
            if self.on_progress is not None and not self.broken:
                self.on_progress(message[1])
            return
        if worker.done:
            return
        worker.done = True
        if kind == "ok":
            outcome.timings.extend(worker.task.decode(message[1]))
            worker.releases = list(message[2])
        elif kind == "broken":
            self.secondary.append(message[1])
        elif kind == "error":
            self.errors.append(f"host {worker.host.name}: {message[1]}")
            self._break()
        else:  # the channel closed without a reply: the worker or its gateway died
            self.errors.append(f"{worker.name} died ({_exit_reason(worker)})")
            self._break()
        self.waiting.discard(index)
        self._release_if_all_ready()

    def _release_if_all_ready(self) -> None:
        running = {i for i, worker in enumerate(self.workers) if not worker.done}
        if self.broken:
            self._send_to(self.waiting, ("abort",))
            self.waiting.clear()
        elif running and self.waiting >= running:
            self._send_to(running, ("go",))
            self.waiting.clear()

    def _break(self) -> None:
        self.broken = True
        self._release_if_all_ready()

    def _send_to(self, indexes: set[int], message: tuple[str, ...]) -> None:
        for index in sorted(indexes):
            try:
                self.workers[index].channel.send(message)
            except OSError:
                pass  # its death arrives as the channel's end


def _sender(inbox: queue.Queue[tuple[int, Any]], index: int) -> Callable[[Any], None]:
    return lambda message: inbox.put((index, message))


def _exit_reason(worker: RemoteWorker) -> str:
    """How the worker's gateway process ended, as far as this side can tell."""
    popen = getattr(worker.gateway._io, "popen", None)
    if popen is None:
        return "its connection closed"
    try:
        code = popen.wait(2)
    except Exception:
        return "its connection closed"
    return exit_code_text(code)


def stage_facts(workers: list[RemoteWorker]) -> dict[str, Any]:
    """Where each worker ran, and each timed step's barrier release skew (seconds).

    A worker's release times are its own clock's; minus its offset they are
    the coordinator's, to within half the round trip of the offset's estimate
    (the skew's uncertainty).
    """
    if not workers:
        return {}
    skews = []
    for wait, phase in workers[0].task.timed_waits():
        released = [
            w.releases[wait] - w.clock_offset_seconds for w in workers if len(w.releases) > wait
        ]
        if len(released) == len(workers):
            skews.append(
                {
                    "phase": phase,
                    "skew_seconds": max(released) - min(released),
                    "uncertainty_seconds": max(w.clock_rtt_seconds for w in workers) / 2,
                }
            )
    places = {str(w.task.worker): {"host": w.host.name, **w.place} for w in workers}
    return {"barrier_skew": skews, "workers": places}


def _stop_all(group: Any, workers: list[RemoteWorker]) -> None:
    """Close every lifeline (the workers exit), end the gateways, kill what is left by PID."""
    for worker in workers:
        try:
            worker.lifeline.close()
        except OSError:
            pass
    group.terminate(timeout=EXIT_GRACE_SECONDS)


def hosts_problem(hosts: tuple[HostSpec, ...], server_addresses: list[Any]) -> str | None:
    """Why a database can't be measured from *hosts*, or None.

    An embedded ZEO server listens on this machine's loopback only: workers
    on other hosts would look for it on their own.
    """
    remote = [host.name for host in hosts if not host.is_local]
    if remote and server_addresses:
        return (
            f"its embedded ZEO server listens on this machine only; {remote[0]} can't "
            "reach it: run a ZEO server of your own and name it in a <clientstorage> section"
        )
    return None


class HostSession(ProcessSession):
    """Workers on the listed hosts; this process populates, as in the processes mode."""

    def run_stage(
        self, tasks: Sequence[Task], timeout_seconds: float, on_progress: OnProgress | None = None
    ) -> StageOutcome:
        return run_stage_on_hosts(tasks, self.spec.hosts, timeout_seconds, on_progress)

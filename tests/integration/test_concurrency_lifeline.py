"""A worker process runs with no thread of the tool's, and still exits when the runner dies.

The lifeline is a signal, not a waiting thread (concurrency.lifeline), and
progress is sent without multiprocessing's feeder thread (ProgressPipe):
a second thread in the worker cost its timed ZODB work 3-4 %.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from zodbshootout.concurrency import lifeline
from zodbshootout.concurrency.processes import _process_context, run_stage_in_processes
from zodbshootout.config.loader import ConfigSource


@dataclasses.dataclass(frozen=True)
class CountThreads:
    """A toy task: sends a progress message, then reports the threads of its process."""

    worker: int
    source: ConfigSource

    def execute(self, barrier: Any, context: Any) -> list[Any]:
        barrier.wait(10)
        context.progress(("hello", self.worker))
        return [threading.active_count(), sorted(t.name for t in threading.enumerate())]

    def decode(self, results: list[Any]) -> list[Any]:
        return results

    def timed_waits(self) -> list[tuple[int, str]]:
        return []

    def to_plain(self) -> dict[str, Any]:
        return {"worker": self.worker}

    @classmethod
    def from_plain(cls, data: dict[str, Any]) -> CountThreads:
        raise NotImplementedError


def test_a_worker_process_has_only_its_main_thread_and_its_progress_arrives():
    heard: list[Any] = []
    tasks = [
        CountThreads(worker, ConfigSource("<zodb>\n</zodb>\n", "x.conf", "")) for worker in (0, 1)
    ]
    outcome = run_stage_in_processes(tasks, 30, on_progress=heard.append)
    assert outcome.error is None
    assert outcome.timings == [1, ["MainThread"], 1, ["MainThread"]]
    assert sorted(heard) == [("hello", 0), ("hello", 1)]


def sleep_holding(end: Any) -> None:
    lifeline.hold(end)
    time.sleep(60)


def send_holding(end: Any, size: int) -> None:
    """Hold the lifeline on *end*, then send more than the socket buffer holds."""
    lifeline.hold(end)
    end.send_bytes(b"x" * size)
    time.sleep(0.5)  # room to write came back (SIGIO) while the reader kept reading


def start_sleeping(closed_first: bool) -> tuple[Any, Any]:
    """A process that holds a pipe's reading end and sleeps; the writing end (closed if asked)."""
    context = _process_context()
    reader, writer = context.Pipe(duplex=False)
    process = context.Process(target=sleep_holding, args=(reader,))
    if closed_first:
        writer.close()
    process.start()
    reader.close()
    return process, writer


def test_the_process_exits_when_the_other_end_closes():
    process, writer = start_sleeping(closed_first=False)
    time.sleep(0.5)
    assert process.is_alive()
    started = time.monotonic()
    writer.close()  # what the runner's death does
    process.join(10)
    assert process.exitcode == 1
    assert time.monotonic() - started < 5


def test_the_process_exits_when_its_end_was_closed_before_it_held_it():
    process, _writer = start_sleeping(closed_first=True)
    process.join(10)
    assert process.exitcode == 1


def test_room_to_write_again_is_not_taken_for_the_end():
    context = _process_context()
    mine, theirs = context.Pipe()
    size = 8 * 1024 * 1024  # far more than a socket pair's buffer: the send blocks
    process = context.Process(target=send_holding, args=(theirs, size))
    process.start()
    theirs.close()
    time.sleep(0.3)
    assert len(mine.recv_bytes()) == size
    process.join(10)
    assert process.exitcode == 0
    mine.close()

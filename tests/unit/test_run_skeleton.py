"""The runner skeleton after a signal a library swallowed: the run unwinds as interrupted.

SQLite's progress handler, for one, turns the KeyboardInterrupt of SIGINT
into ``sqlite3.OperationalError: interrupted``; a runner that took it for
the database's failure went on to the next database and exited 1.  The
signal is sent to this process for real, inside a step that swallows it.
"""

from __future__ import annotations

import functools
import os
import signal

import pytest

from zodbshootout.config.loader import load_config
from zodbshootout.results.record import RunResult
from zodbshootout.run.skeleton import OnePassRunner, RunnerSkeleton


class SwallowingRunner(RunnerSkeleton):
    """Measures two databases; the first one's step swallows a signal as a library would."""

    def __init__(self, config, signum: int) -> None:
        result = RunResult(config.names, [1], [1], ["cold"], 1)
        super().__init__(config, result)
        self.signum = signum
        self.measured: list[str] = []
        self.failed: dict[str, str] = {}

    def served(self) -> list[str]:
        return []

    def measure(self, servers) -> None:
        for name in self.config.names:
            if self.set_up(name, functools.partial(self._step, name)) is not None:
                self.measured.append(name)

    def _step(self, name: str) -> str:
        if name == "first":
            try:
                os.kill(os.getpid(), self.signum)
                signal.pause()  # never reached: the handler raises first
            except KeyboardInterrupt:
                raise RuntimeError("interrupted") from None  # what SQLite says instead
        return name

    def fail_unsettled(self, name: str, reason: str) -> None:
        self.failed[name] = reason


@pytest.mark.parametrize(
    ("signum", "name"), [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")]
)
def test_a_swallowed_signal_interrupts_the_run_not_the_database(write_config, signum, name):
    path = write_config(
        "<zodb first>\n  <mappingstorage/>\n</zodb>\n<zodb second>\n  <mappingstorage/>\n</zodb>\n"
    )
    runner = SwallowingRunner(load_config(path, data_dir="/tmp"), signum)
    result = runner.run()
    assert result.interrupted
    assert result.signal == name
    assert runner.failed == {}  # not "first: interrupted"
    assert runner.measured == []  # nor on to the second database


class ToyPass(OnePassRunner[int]):
    """A one-pass mode of *options* workers: "late" fails once open, "early" before."""

    phase = "toy"

    def planned(self, config, options: int) -> RunResult:
        return RunResult.one_pass(config.names, [7], options)

    def served(self) -> list[str]:
        return []

    def measure(self, servers) -> None:
        self.measure_each(self._database)

    def _database(self, name: str) -> bool:
        if name == "late":
            self.opened.add(name)
        if name in ("early", "late"):
            raise RuntimeError(f"{name} broke")
        self.result.notes.append(f"{name} measured")
        return True


def test_a_one_pass_failure_is_said_once_its_database_is_open(write_config):
    path = write_config(
        "".join(
            f"<zodb {name}>\n  <mappingstorage/>\n</zodb>\n" for name in ("early", "late", "ok")
        )
    )
    said: list[str] = []
    result = ToyPass(load_config(path, data_dir="/tmp"), 3, said.append).run()
    assert [(f.database, f.concurrency, f.object_count, f.phases) for f in result.failures] == [
        ("early", 3, 7, ("toy",)),
        ("late", 3, 7, ("toy",)),
    ]
    # Before it was open: said at the end, as a set-up failure; after: at once.
    assert result.setup_failed == ["early"]
    assert said == ["late: failed: RuntimeError: late broke"]
    assert result.notes == ["ok measured"]


def test_a_one_pass_mode_warns_through_its_say(write_config):
    said: list[str] = []
    runner = ToyPass(
        load_config(write_config("<zodb ok>\n  <mappingstorage/>\n</zodb>\n"), "/tmp"),
        1,
        said.append,
    )
    runner.warn("hosts differ")
    assert said == ["warning: hosts differ"]
    assert runner.result.notes == []

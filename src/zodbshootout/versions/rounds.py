"""The rounds: the tool run in each variant's environment in turn, its result read back.

Each run is a real ``python -m zodbshootout`` of the variant's environment,
with the user's arguments and ``-o`` pointing into a scratch directory: the
same program a user would run there, in a process of its own.  Its output
goes to a log beside the result; a run that ends with a usage error (exit
2: a bad configuration, a missing driver) stops everything with its own
line, since every other round would fail the same way.
"""

from __future__ import annotations

import pathlib
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass

from zodbshootout.errors import EXIT_SIGINT, EXIT_SIGTERM, EXIT_USAGE, UsageError
from zodbshootout.results import file as resultfile
from zodbshootout.results.record import RunResult
from zodbshootout.results.versions import RoundRecord
from zodbshootout.versions.environments import Environment
from zodbshootout.versions.schedule import round_orders

#: Options of a run that versions sets itself (each round's result file).
OWN_OPTIONS = ("-o", "--output", "--save-to", "--pyperf")


class Terminated(KeyboardInterrupt):
    """SIGTERM, as the command line's handler raises it (Ctrl-C is KeyboardInterrupt)."""


class Interrupted(Exception):
    """A round's run was interrupted (SIGINT or SIGTERM): what was measured is kept."""

    def __init__(self, exit_code: int, kept: tuple[RoundRecord, RunResult] | None) -> None:
        super().__init__(exit_code)
        self.exit_code = exit_code
        self.kept = kept  # the interrupted round's record and partial result, if it saved one


@dataclass
class Rounds:
    """What the rounds measured so far: each variant's runs, and when each ran."""

    results: dict[str, list[RunResult]]
    records: list[RoundRecord]
    interrupted: int | None = None  # the exit code of an interrupted round


def check_command(arguments: list[str]) -> None:
    """Refuse the options versions sets itself in the arguments given to each run."""
    for word in arguments:
        option = word.split("=", 1)[0]
        if option in OWN_OPTIONS:
            raise UsageError(
                f"{option} is for versions itself, not for each run: give versions -o "
                "FILE.json to save the variants' runs"
            )


def run_rounds(
    environments: list[Environment],
    arguments: list[str],
    scratch: pathlib.Path,
    rounds: int,
    order: str = "alternate",
    seed: int | None = None,
    report: Callable[[str], None] = lambda message: None,
) -> Rounds:
    """Run *arguments* in every environment, *rounds* times, interleaved."""
    done = Rounds({e.variant.name or "": [] for e in environments}, [])
    for number, indexes in enumerate(round_orders(len(environments), rounds, order, seed), 1):
        for position, index in enumerate(indexes, start=1):
            environment = environments[index]
            name = environment.variant.name or ""
            report(f"round {number}/{rounds}: {name}")
            try:
                record, result = run_one(environment, arguments, scratch, number, position)
            except Interrupted as stop:
                done.interrupted = stop.exit_code
                if stop.kept:
                    done.records.append(stop.kept[0])
                    done.results[name].append(stop.kept[1])
                return done
            done.records.append(record)
            done.results[name].append(result)
            report(
                f"round {number}/{rounds}: {name}: {record.finished - record.started:.1f} s"
                + ("" if record.exit_code == 0 else " (some cells failed)")
            )
    return done


def run_one(
    environment: Environment,
    arguments: list[str],
    scratch: pathlib.Path,
    number: int,
    position: int,
) -> tuple[RoundRecord, RunResult]:
    """One run of the tool in *environment*; its record and result."""
    stem = scratch / f"round{number}-{position}"
    output, log = stem.with_suffix(".json"), stem.with_suffix(".log")
    command = [str(environment.python), "-m", "zodbshootout", *arguments, "-o", str(output)]
    started = time.time()
    stopped_by = None
    with open(log, "w", encoding="utf-8") as stream:
        process = subprocess.Popen(
            command, stdout=stream, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        try:
            exit_code = process.wait()
        except KeyboardInterrupt as stop:
            stopped_by = EXIT_SIGTERM if isinstance(stop, Terminated) else EXIT_SIGINT
            exit_code = _stop(
                process, signal.SIGTERM if stopped_by == EXIT_SIGTERM else signal.SIGINT
            )
    record = RoundRecord(number, position, environment.variant.name or "", started, time.time(),
                         exit_code)  # fmt: skip
    if stopped_by is None and exit_code in _INTERRUPTED:
        stopped_by = _INTERRUPTED[exit_code]
    if stopped_by is not None:
        kept = (record, resultfile.load(str(output))) if output.is_file() else None
        raise Interrupted(stopped_by, kept)
    if exit_code == EXIT_USAGE or not output.is_file():
        raise UsageError(
            f"{record.variant}: the run ended with exit {exit_code}: {_last_line(log)}"
        )
    return record, resultfile.load(str(output))


#: A run's exit codes (and deaths by signal) that say it was interrupted.
_INTERRUPTED = {
    EXIT_SIGINT: EXIT_SIGINT,
    EXIT_SIGTERM: EXIT_SIGTERM,
    -signal.SIGINT: EXIT_SIGINT,
    -signal.SIGTERM: EXIT_SIGTERM,
}


#: Seconds an interrupted run has to save what it measured and stop.
STOP_SECONDS = 60


def _stop(process: subprocess.Popen[bytes], signum: int) -> int:
    """Let an interrupted run save what it measured: pass the signal on (a terminal's
    Ctrl-C reached it already), wait, and kill it only if it does not stop; its exit code."""
    try:
        return process.wait(timeout=1)
    except subprocess.TimeoutExpired:
        process.send_signal(signum)
    try:
        return process.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


def _last_line(log: pathlib.Path) -> str:
    """The run's own reason: its last line on stderr (which the log ends with)."""
    lines = [line.strip() for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"

"""The frame the modes' subcommands share: their exit codes.

(Their metadata reads the environment, git's commit included: an integration test's.)
"""

from __future__ import annotations

import argparse

from zodbshootout import errors
from zodbshootout.cli.outputs import RunOutputs
from zodbshootout.cli.running import exit_for_mode, setup_failed
from zodbshootout.results.record import Failure, RunResult


def _failed(interrupted: bool = False) -> RunResult:
    result = RunResult.one_pass(["db"], [1])
    result.failures.append(Failure("db", 1, 1, ("mix",), "unreachable"))
    result.setup_failed.append("db")
    result.interrupted = interrupted
    return result


def test_no_database_set_up_is_one_error_line_each(capsys):
    assert setup_failed(_failed(), measured=False, command="mix")
    assert capsys.readouterr().err == "zodbshootout mix: error: db: unreachable\n"


def test_a_signal_or_a_measurement_is_not_a_set_up_failure(capsys):
    assert not setup_failed(_failed(interrupted=True), measured=False, command="replay")
    assert not setup_failed(_failed(), measured=True, command="maintain")
    assert capsys.readouterr().err == ""


def test_a_mode_exits_with_the_signal_then_with_a_failure(tmp_path):
    outputs = RunOutputs(argparse.Namespace())
    assert exit_for_mode(RunResult.one_pass(["db"], [1]), outputs) == errors.EXIT_OK
    assert exit_for_mode(_failed(), outputs) == errors.EXIT_CELLS_FAILED
    stopped = _failed(interrupted=True)
    stopped.signal = "SIGTERM"
    assert exit_for_mode(stopped, outputs) == errors.EXIT_SIGTERM
    outputs.save_failed = True
    assert exit_for_mode(RunResult.one_pass(["db"], [1]), outputs) == errors.EXIT_CELLS_FAILED

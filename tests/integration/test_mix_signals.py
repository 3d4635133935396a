"""``zodbshootout mix`` and SIGINT / SIGTERM: the classic run's contract (docs/safety.rst).

What was measured is printed and saved, marked interrupted with the
signal's name; the exit code is 130 or 143; the temporary data directory is
removed and no process the tool started is left (the helpers of
test_interrupt: the command runs in a session of its own).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import signal
import tempfile
import time

import pytest

from support import configs
from support.processes import start_cli, wait_until_session_empty

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]

#: Two databases, one of them with a ZEO server the tool starts.
CONFIG = (
    "%import zodbshootout\n%import relstorage\n"
    + configs.sqlite("first")
    + (configs.embedded_zeo("second"))
)
SIGNALS = [(signal.SIGINT, 130), (signal.SIGTERM, 143)]


def start_mix(
    request,
    tmp_path,
    duration: str,
    fault: str | None = None,
    objects: str = "200",
    warmup: str = "0",
):
    """A mix run in its own session, its temporary directories (TMPDIR) in a new one.

    *fault*: the tests' fault hook (see zodbshootout.faults), e.g. a hang.
    """
    config = tmp_path / "two.conf"
    config.write_text(CONFIG)
    # Short: the fork server's socket lives there too (AF_UNIX paths are short).
    temporary = pathlib.Path(tempfile.mkdtemp(prefix="zs-"))
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    result_file = tmp_path / "mix.json"
    cli = start_cli(
        "mix", str(config), "-n", objects, "-c", "2", "-d", duration, "--warmup", warmup,
        "--interval", "0.5", "--seed", "3", "-o", str(result_file),
        env={"TMPDIR": str(temporary), **({"ZODBSHOOTOUT_FAULT": fault} if fault else {})},
    )  # fmt: skip
    return cli, result_file, temporary


def hold_until(cli, database: str, what: str = "tx/s") -> str:
    """Read stderr until *database*'s line with *what* (default: its workers measure)."""
    assert cli.stderr is not None
    seen = []
    for line in cli.stderr:
        seen.append(line)
        if line.startswith(f"zodbshootout mix: {database}: ") and what in line:
            return "".join(seen)
    cli.kill()
    pytest.fail(f"the run ended before {database} was measured: " + "".join(seen))


def stop(cli, signum, temporary):
    """Send *signum*; the outcome, and what the command left behind."""
    stdout, stderr, left, data_dirs, _seconds = stop_timed(cli, signum, temporary)
    return stdout, stderr, left, data_dirs


def stop_timed(cli, signum, temporary):
    """:func:`stop`, and how long the command took to exit after the signal."""
    cli.send_signal(signum)
    sent = time.monotonic()
    stdout, stderr = cli.communicate(timeout=60)
    seconds = time.monotonic() - sent
    left = wait_until_session_empty(cli.pid)
    data_dirs = [path.name for path in temporary.iterdir() if path.name.startswith("zodbshootout")]
    return stdout, stderr, left, data_dirs, seconds


def assert_nothing_measured(cli, code, signum, stdout, stderr, result_file, left, data_dirs):
    """Interrupted before any worker measured: saved as interrupted, no figure at all."""
    assert cli.returncode == code, stderr
    assert "Traceback" not in stderr
    assert "ycsb-b, 2 workers" not in stdout  # no table of made-up figures
    saved = json.loads(result_file.read_text())
    assert saved["interrupted"] is True
    assert saved["signal"] == signal.Signals(signum).name
    assert saved["mix"] == []
    assert saved["failures"] == []  # interrupted is not failed
    assert data_dirs == []
    assert left == []


@pytest.mark.parametrize(("signum", "code"), SIGNALS)
def test_a_signal_while_the_dataset_loads_saves_an_interrupted_run(request, tmp_path, signum, code):
    """During the untimed load of 100,000 objects (several seconds) into SQLite."""
    cli, result_file, temporary = start_mix(request, tmp_path, "1", objects="100000")
    hold_until(cli, "first", "loading the dataset")
    stdout, stderr, left, data_dirs, seconds = stop_timed(cli, signum, temporary)

    assert_nothing_measured(cli, code, signum, stdout, stderr, result_file, left, data_dirs)
    assert "second: " not in stderr  # the run stopped, not the database
    assert seconds < 20, stderr  # not once the load and the 2 databases' runs are over


@pytest.mark.parametrize(("signum", "code"), SIGNALS)
def test_a_signal_during_the_warm_up_saves_an_interrupted_run(request, tmp_path, signum, code):
    """Within a 60 s warm-up: the run stops at once, the warm-up (never kept) discarded."""
    cli, result_file, temporary = start_mix(request, tmp_path, "1", warmup="60")
    hold_until(cli, "first", "warm-up 60 s")
    time.sleep(2)  # the workers start and warm up
    stdout, stderr, left, data_dirs, seconds = stop_timed(cli, signum, temporary)

    assert_nothing_measured(cli, code, signum, stdout, stderr, result_file, left, data_dirs)
    assert "second: " not in stderr
    assert seconds < 20, stderr  # not the 58 s of warm-up left


@pytest.mark.parametrize(("signum", "code"), SIGNALS)
def test_a_signal_while_the_first_database_measures_saves_an_interrupted_run(
    request, tmp_path, signum, code
):
    cli, result_file, temporary = start_mix(request, tmp_path, "60")
    hold_until(cli, "first")
    _stdout, stderr, left, data_dirs = stop(cli, signum, temporary)

    assert cli.returncode == code, stderr
    assert "Traceback" not in stderr
    saved = json.loads(result_file.read_text())
    assert saved["interrupted"] is True
    assert saved["signal"] == signal.Signals(signum).name
    assert saved["mix"] == []  # nothing was finished
    assert data_dirs == []
    assert left == []


@pytest.mark.parametrize(("signum", "code"), SIGNALS)
def test_a_signal_during_the_second_database_keeps_the_first(request, tmp_path, signum, code):
    cli, result_file, temporary = start_mix(request, tmp_path, "1.5")
    progress = hold_until(cli, "second")
    assert "first: reading every object's version back" in progress
    stdout, stderr, left, data_dirs = stop(cli, signum, temporary)

    assert cli.returncode == code, stderr
    assert "Traceback" not in stderr
    # The table shows the first database, measured in full; the second not at all.
    assert "first: ycsb-b, 2 workers" in stdout
    assert "second: ycsb-b" not in stdout
    saved = json.loads(result_file.read_text())
    assert saved["interrupted"] is True
    assert saved["signal"] == signal.Signals(signum).name
    (first,) = saved["mix"]
    assert first["database"] == "first"
    assert first["changes_found"] is not None  # its read-back finished too
    assert sum(op["count"] for op in first["operations"].values()) > 0
    assert data_dirs == []
    assert left == []


@pytest.mark.parametrize(("signum", "code"), SIGNALS)
def test_a_signal_during_the_read_back_keeps_that_database_measured(
    request, tmp_path, signum, code
):
    cli, result_file, temporary = start_mix(request, tmp_path, "1", fault="first:readback:0:hang")
    hold_until(cli, "first", "reading every object's version back")
    stdout, stderr, left, data_dirs = stop(cli, signum, temporary)

    assert cli.returncode == code, stderr
    assert "Traceback" not in stderr
    assert "first: ycsb-b, 2 workers" in stdout
    saved = json.loads(result_file.read_text())
    assert saved["interrupted"] is True
    (first,) = saved["mix"]
    assert first["database"] == "first"
    assert first.get("changes_found") is None  # the check never finished: not claimed
    assert sum(op["count"] for op in first["operations"].values()) > 0
    assert data_dirs == []
    assert left == []


def test_a_read_back_that_fails_keeps_the_measurement_and_says_why(request, tmp_path):
    cli, result_file, _temporary = start_mix(request, tmp_path, "1", fault="first:readback:0:raise")
    stdout, stderr = cli.communicate(timeout=240)

    assert cli.returncode == 1, stderr  # some of it ran: not a usage error
    reason = "the read-back failed: InjectedFault: injected fault in readback"
    assert f"first: failed: {reason}" in stderr
    assert "first: ycsb-b, 2 workers" in stdout
    assert "second: ycsb-b, 2 workers" in stdout
    saved = json.loads(result_file.read_text())
    assert [record["database"] for record in saved["mix"]] == ["first", "second"]
    assert [failure["database"] for failure in saved["failures"]] == ["first"]
    assert saved["setup_failed"] == []
    assert wait_until_session_empty(cli.pid) == []

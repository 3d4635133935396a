"""Runs that several test modules read, made once per test session (issue 28).

A module fixture runs once per module; two modules that need the same run
(a mix run that one module plots and another reports, an RTT ladder that
one module plots and another opens in a browser) would each make it.  Here
the first to ask makes it, in a directory shared by the session's
pytest-xdist workers (beside their own temporary directories), under a lock
that the others wait on; they then read what it made.  Whoever reads a
shared run must not change it: tests write their own files in tmp_path.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import shutil
from collections.abc import Callable

import pytest

from conftest import run_cli
from support import configs

DONE = ".made"


def made_once(
    factory: pytest.TempPathFactory, name: str, make: Callable[[pathlib.Path], None]
) -> pathlib.Path:
    """The directory *name*, filled by ``make(directory)`` once for the whole session."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's: each worker's own is below it
    directory = base / f"shared-{name}"
    with open(base / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (directory / DONE).exists():
            # A half-made one (its maker failed) is made again, and fails again.
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            make(directory)
            (directory / DONE).touch()
    return directory


def _ladder(base: pathlib.Path, command: tuple[str, ...], *argv: str) -> None:
    """An RTT ladder at 0, 2 and 5 ms on an embedded ZEO and a FileStorage, saved as
    ladder.json; its report beside it in site/."""
    config = base / "ladder.conf"
    config.write_text(configs.embedded_zeo("zeo") + configs.filestorage("fs"))
    result = base / "ladder.json"
    env = {"ZODBSHOOTOUT_DATA": str(base / "data")}
    done = run_cli(
        *command, str(config), *argv, "--rtt", "0,2,5ms", "-o", str(result), "-q", env=env
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    done = run_cli("report", str(result), "-o", str(base / "site"))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"


#: Each ladder's command and options: the classic one reads three phases.
LADDERS = {
    "classic": ((), ("-n", "30", "-c", "1", "-r", "1", "cold", "prefetch", "steamin")),
    "mix": (("mix",), ("-n", "200", "-c", "1", "-d", "1", "--warmup", "0.2")),
}


def rtt_ladder(factory: pytest.TempPathFactory, kind: str) -> pathlib.Path:
    """The saved ladder of *kind* (see LADDERS), made once; its report in site/ beside it."""
    command, argv = LADDERS[kind]
    directory = made_once(factory, f"rtt-{kind}", lambda base: _ladder(base, command, *argv))
    return directory / "ladder.json"


#: The short mix run's interval, in seconds.
MIX_INTERVAL = 0.25


def _mix(base: pathlib.Path) -> None:
    config = base / "mix.conf"
    config.write_text(configs.embedded_zeo("zeo") + configs.sqlite("sqlite"))
    result = base / "mix.json"
    env = {"ZODBSHOOTOUT_DATA": str(base / "data")}
    argv = ("-n", "200", "-d", "1.5", "--warmup", "0", "--interval", str(MIX_INTERVAL), "-q")
    done = run_cli("mix", str(config), *argv, "-o", str(result), env=env)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    done = run_cli("report", str(result), "-o", str(base / "site"))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert f"wrote {base / 'site' / 'index.html'} (3 files)" in done.stderr


def zeo_and_sqlite_mix(factory: pytest.TempPathFactory) -> pathlib.Path:
    """A short mix run (ycsb-b) on an embedded ZEO server and on SQLite, sampled every
    MIX_INTERVAL s, saved as mix.json, made once; its report in site/ beside it."""
    return made_once(factory, "mix-zeo-sqlite", _mix) / "mix.json"

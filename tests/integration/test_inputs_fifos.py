"""A FIFO as an input never hangs the run, named directly or included through a define.

Each case runs the command in a process of its own, with a timeout: a hang is a failure,
not a stuck suite."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return str(path)


def _defined_include(tmp_path, target: str) -> str:
    """A configuration that names *target* only through a %define (ZConfig substitutes it)."""
    config = tmp_path / "main.conf"
    directory, name = os.path.split(target)
    config.write_text(f"%define where {directory}\n# databases\n%include $where/{name}\n")
    return str(config)


def test_a_fifo_as_configuration_or_log_setup_does_not_hang(fifo, tmp_path):
    """In a child process, so that a hang is a timeout here, not a stuck suite."""
    config = tmp_path / "mem.conf"
    config.write_text("<zodb mem>\n  <mappingstorage/>\n</zodb>\n")
    for argv in ([fifo], [str(config), "--threads", "--log", fifo]):
        done = subprocess.run(
            [sys.executable, "-m", "zodbshootout", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
        assert "it is a FIFO, not a regular file" in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr


def test_an_include_through_a_define_to_a_fifo_does_not_hang(fifo, tmp_path):
    """In a child process, so that a hang is a timeout here, not a stuck suite."""
    config = _defined_include(tmp_path, fifo)
    done = subprocess.run(
        [sys.executable, "-m", "zodbshootout", config, "-n", "5"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, ""), f"{done.stdout}\n{done.stderr}"
    assert done.stderr == (
        f"zodbshootout: error: {config}:3: refusing to read the included file {fifo}: "
        "it is a FIFO, not a regular file\n"
    )


def test_a_logging_configuration_includes_through_a_define_are_checked(fifo, tmp_path):
    config = tmp_path / "mem.conf"
    config.write_text("<zodb mem>\n  <mappingstorage/>\n</zodb>\n")
    log_config = _defined_include(tmp_path, fifo)
    done = subprocess.run(
        [sys.executable, "-m", "zodbshootout", str(config), "--threads", "--log", log_config],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, ""), f"{done.stdout}\n{done.stderr}"
    assert done.stderr == (
        f"zodbshootout: error: --log {log_config}: {log_config}:3: refusing to read the "
        f"included file {fifo}: it is a FIFO, not a regular file\n"
    )

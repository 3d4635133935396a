"""Worker processes under a long TMPDIR: the fork server's socket is an AF_UNIX path.

Such a path holds 107 bytes; under a TMPDIR of 90 characters every worker
failed to start (``OSError: AF_UNIX path too long``) and nothing could be
measured.  multiprocessing's own directory moves to /tmp; the tool's
temporary data stays in TMPDIR and is removed as ever.
"""

from __future__ import annotations

import pathlib
import shutil
import tempfile

import pytest

from conftest import run_cli
from support import configs

pytestmark = pytest.mark.slow


@pytest.fixture
def long_tmpdir():
    base = pathlib.Path(tempfile.mkdtemp(prefix="zs-long-", dir="/tmp"))
    directory = base / ("t" * (90 - len(str(base)) - 1))
    directory.mkdir()
    assert len(str(directory)) == 90
    yield directory
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("mode", ["classic", "mix"])
def test_workers_start_under_a_long_tmpdir(tmp_path, long_tmpdir, mode):
    config = tmp_path / "sqlite.conf"
    config.write_text("%import relstorage\n" + configs.sqlite("first"))
    argv = (
        [str(config), "-n", "5", "-c", "2", "-r", "1", "-q", "add"]
        if mode == "classic"
        else ["mix", str(config), "-n", "20", "-c", "2", "-d", "0.3", "--warmup", "0", "-q"]
    )
    done = run_cli(*argv, env={"TMPDIR": str(long_tmpdir)})
    assert done.returncode == 0, done.stderr
    assert "AF_UNIX" not in done.stderr
    assert list(long_tmpdir.iterdir()) == []  # the temporary data removed

"""Small error paths: long bad arguments are cut in messages; -p naming a file is one line."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from zodbshootout.cli.entry import main

IN_MEMORY = "<zodb mem>\n  <mappingstorage/>\n</zodb>\n"


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ["-n", "9" * 10_000],
        ["--format", "y" * 10_000],
        ["show", "x" * 10_000],
        ["compare", "z" * 10_000, "a.json"],
    ],
)
def test_a_10_kb_bad_argument_is_not_echoed_whole(tmp_path, argv):
    config = tmp_path / "mem.conf"
    config.write_text(IN_MEMORY)
    if argv[0] not in ("show", "compare"):
        argv = [str(config), "--threads", *argv]
    code, stdout, stderr = run_main(*argv)
    assert (code, stdout) == (2, ""), stderr[:300]
    assert stderr.count("\n") == 1
    assert len(stderr) < 1000, stderr[:300]
    assert re.search(r"…\(10,00[0-2] characters\)", stderr), stderr[:300]


def test_a_profile_directory_that_is_a_file_is_one_line(tmp_path):
    config = tmp_path / "mem.conf"
    config.write_text(IN_MEMORY)
    taken = tmp_path / "profiles"
    taken.write_text("not a directory")
    code, stdout, stderr = run_main(str(config), "--threads", "-n", "5", "-p", str(taken))
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"zodbshootout: error: -p {taken}: it exists and is not a directory; name a directory\n"
    )
    assert taken.read_text() == "not a directory"


def test_a_filestorage_path_that_is_no_regular_file_is_refused_creating_nothing(tmp_path):
    """A FIFO stands for a device here: never a real /dev path in a test."""
    import os

    devices = tmp_path / "devices"
    devices.mkdir()
    fifo = devices / "node"
    os.mkfifo(fifo)
    config = tmp_path / "fs.conf"
    config.write_text(f"<zodb fs>\n  <filestorage>\n    path {fifo}\n  </filestorage>\n</zodb>\n")
    code, _stdout, stderr = run_main(str(config), "--threads", "-c", "1", "-n", "5", "-r", "1")
    assert code == 2, stderr
    assert stderr == (
        f"zodbshootout: error: fs: the FileStorage path {fifo} is a FIFO, not a regular file; "
        "name a new file or an existing FileStorage\n"
    )
    assert [p.name for p in devices.iterdir()] == ["node"]


PROFILE_UNDER_A_FILE_SIZE_LIMIT = """
import cProfile, resource, signal, sys
from zodbshootout.probes.profiler import write_profile

profile = cProfile.Profile()
profile.enable()
for module in list(sys.modules.values()):
    repr(module)
profile.disable()
# A write beyond 100 bytes fails with EFBIG, as one on a full disk fails with ENOSPC.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))
try:
    write_profile(profile, sys.argv[1])
except OSError as e:
    print("failed:", e.strerror)
"""


def test_a_profile_that_cannot_be_written_whole_leaves_no_partial_file(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", PROFILE_UNDER_A_FILE_SIZE_LIMIT, str(tmp_path / "cell-add-w0")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.startswith("failed: File too large"), done.stdout + done.stderr
    assert list(tmp_path.iterdir()) == []

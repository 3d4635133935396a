"""The command run inside the test's own process: cli.main with its output captured.

Most tests run the command this way (conftest.run_cli too).  What a run
starts — its fork server, worker processes, ZEO servers — is as real as from
a shell; but the interpreter, the command's imports and the fork server start
once per pytest worker instead of once per command (a short run of
etc/local.conf: 0.88 CPU seconds instead of 1.33).  A test that reads what
the command's children print (their stderr is this process's), signals the
command, gives it an environment, input or directory of its own, or looks
for the processes it leaves behind runs it in a process of its own
(``run_cli(own_process=True)``, support.processes).
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import multiprocessing.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from unittest import mock

from zodbshootout.cli import entry as cli

_shared_directory: str | None = None


def _shared_temporary_directory() -> str:
    """TMPDIR of what outlives one command here: the fork server all this worker's runs share.

    A test's own temporary directory is removed after it, while the fork
    server it started serves the tests that follow.
    """
    global _shared_directory
    if _shared_directory is None:
        _shared_directory = tempfile.mkdtemp(prefix="zs-inprocess-")
    return _shared_directory


def remove_shared_temporary_directory() -> None:
    """At the end of the session: remove what the shared processes left."""
    global _shared_directory
    if _shared_directory is not None:
        shutil.rmtree(_shared_directory, ignore_errors=True)
        _shared_directory = None


@contextlib.contextmanager
def _as_a_command(timeout: float) -> Iterator[None]:
    """The process state a command starts with, for one run; a hang ends the worker, loudly.

    The environment comes back as it was, whatever the run set in it.
    """
    # multiprocessing's own directory (the fork server's socket) lives as long as this process.
    multiprocessing.util.get_temp_dir()
    own = os.environ.get("TMPDIR")  # the test's (conftest: _temporary_files_of_the_test)
    stdin, chosen = sys.stdin, tempfile.tempdir
    tempfile.tempdir = own or chosen
    sys.stdin = io.StringIO("")  # as from /dev/null: no prompt waits
    faulthandler.dump_traceback_later(timeout, exit=True, file=sys.__stderr__)
    try:
        with mock.patch.dict(os.environ, TMPDIR=_shared_temporary_directory()):
            yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        sys.stdin, tempfile.tempdir = stdin, chosen


def run_main(*argv: str, timeout: float = 300) -> tuple[int, str, str]:
    """cli.main in this process: (exit code, stdout, stderr).

    The run reads this process's environment: ``$ZODBSHOOTOUT_DATA`` too
    (conftest's ``data_dir``).
    """
    out, err = io.StringIO(), io.StringIO()
    with _as_a_command(timeout), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as e:  # argparse's --help and --version
            code = e.code if isinstance(e.code, int) else int(e.code is not None)
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, stdout: str, stderr: str) -> None:
    """A usage error: exit 2, nothing on stdout, one ``zodbshootout: error:`` line, no traceback."""
    assert code == cli.EXIT_USAGE, stderr
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("zodbshootout: error: ")
    assert "Traceback" not in stderr

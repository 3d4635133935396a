"""The command line run inside the test's own process: cli.main with its output captured."""

from __future__ import annotations

import contextlib
import io

from zodbshootout.cli import entry as cli


def run_main(*argv: str) -> tuple[int, str, str]:
    """cli.main in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, stdout: str, stderr: str) -> None:
    """A usage error: exit 2, nothing on stdout, one ``zodbshootout: error:`` line, no traceback."""
    assert code == cli.EXIT_USAGE, stderr
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("zodbshootout: error: ")
    assert "Traceback" not in stderr

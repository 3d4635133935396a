"""A driver that isn't installed: one line naming what to install, exit code 2."""

from __future__ import annotations

import contextlib
import io

import pytest

from zodbshootout.cli import entry as cli


def run_main(*argv: str) -> tuple[int, str, str]:
    """cli.main in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, stdout: str, stderr: str) -> None:
    assert code == cli.EXIT_USAGE, stderr
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("zodbshootout: error: ")
    assert "Traceback" not in stderr


def test_fails_with_missing_driver_naming_what_to_install(write_config):
    # psycopg2cffi is a driver RelStorage knows that no extra of ours installs.
    pytest.importorskip("relstorage")
    try:
        import psycopg2cffi  # noqa: F401

        pytest.skip("psycopg2cffi is installed here")
    except ImportError:
        pass
    path = write_config("""
        <zodb pg>
          <relstorage>
            <postgresql>
              driver psycopg2cffi
              dsn host=127.0.0.1 port=1 dbname=never
            </postgresql>
          </relstorage>
        </zodb>
    """)
    code, stdout, stderr = run_main(path, "-n", "10", "-q")
    assert_one_line_error(code, stdout, stderr)
    assert "pg: the Python module 'psycopg2cffi' is not installed" in stderr
    assert "pip install psycopg2cffi" in stderr

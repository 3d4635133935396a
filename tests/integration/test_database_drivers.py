"""A driver that isn't installed: one line naming what to install, exit code 2."""

from __future__ import annotations

import pytest

from support.inprocess import assert_one_line_error, run_main


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

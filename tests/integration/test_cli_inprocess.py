"""cli.main called again and again in one process, as the tests call it (support/inprocess.py).

The suite's runs share the pytest worker's interpreter and fork server:
each must measure as the first did and hand the process back as it found it.
"""

from __future__ import annotations

import os
import sys
import tempfile

from conftest import table_rows
from support import configs
from support.inprocess import run_main


def _process_state() -> tuple:
    """What a run in this process changes while it runs, and must put back."""
    return (dict(os.environ), sys.stdin, tempfile.tempdir)


def test_runs_in_one_process_each_measure_and_leave_the_process_as_they_found_it(
    write_config,
):
    config = write_config(configs.sqlite("sqlite"))
    before = _process_state()
    for _ in range(2):  # the second run's workers come from the fork server the first started
        code, stdout, stderr = run_main(config, "-n", "10", "-c", "2", "-r", "1", "add")
        assert code == 0, stderr
        (cells,) = table_rows(stdout).values()
        assert float(cells[0]) > 0
        assert _process_state() == before
    # The runs' temporary data directories were the test's own, and are gone.
    assert not [name for name in os.listdir(os.environ["TMPDIR"]) if "zodbshootout" in name]


def test_help_ends_with_its_exit_code_instead_of_leaving_the_process():
    code, stdout, _stderr = run_main("--help")
    assert code == 0
    assert stdout.startswith("usage: zodbshootout")
    code, stdout, _stderr = run_main("show", "--help")  # the process went on
    assert code == 0
    assert stdout.startswith("usage: zodbshootout show")

"""``compare --only-significant`` against the real ``pyperf compare_to`` on the same data.

Both runs are saved as result files and exported with ``zodbshootout export``
to pyperf suites; pyperf's own command line says which benchmarks it hides
as not significant.  Where a change is large, both keep the same cells.
Where two of 24 cells moved by a busy machine's noise, pyperf (Student's
t-test on each cell alone at 0.05) keeps them and zodbshootout (Welch's
t-test, Holm-corrected for the 24 cells) hides them, saying that a test of
each cell alone would show them: the difference is the multiple-testing
correction, and the test checks that it is exactly that (the raw p column).
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from unit.sample_run import busy_result, with_noise  # the unit tests' runs (tests/unit)
from zodbshootout.results import file as resultfile

from conftest import run_cli

pytest.importorskip("pyperf", reason="pyperf is not installed (the test extra has it)")

CHANGED_CELLS = (("mysql", "cold"), ("zeo_fs", "warm"))


def _saved(tmp_path: pathlib.Path, factor: float) -> tuple[str, str, str, str]:
    """The base and changed result files and their pyperf exports."""
    changed = busy_result()
    for database, phase in CHANGED_CELLS:
        changed = with_noise(changed, database, phase, (factor,) * 5)
    paths = []
    for name, result in (("base", busy_result()), ("changed", changed)):
        run = tmp_path / f"{name}.json"
        resultfile.save(result, str(run))
        suite = tmp_path / f"{name}-pyperf.json"
        done = run_cli("export", str(run), "-o", str(suite))
        assert done.returncode == 0, done.stdout + done.stderr
        paths += [str(run), str(suite)]
    return paths[0], paths[2], paths[1], paths[3]


def pyperf_shown(base_suite: str, changed_suite: str) -> tuple[set[str], int]:
    """The benchmarks ``pyperf compare_to`` shows, and how many it says it hid."""
    done = subprocess.run(
        [sys.executable, "-m", "pyperf", "compare_to", base_suite, changed_suite],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    shown = {line.split(":")[0] for line in done.stdout.splitlines() if ": Mean +- std dev" in line}
    hidden = re.search(r"Benchmark hidden because not significant \((\d+)\)", done.stdout)
    return shown, int(hidden.group(1)) if hidden else 0


def ours_shown(base: str, changed: str) -> tuple[set[str], str]:
    """The cells ``compare --only-significant`` lists, named as the export names them."""
    done = run_cli("compare", base, changed, "--only-significant", "--format", "csv")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split(",") for line in done.stdout.splitlines()[1:]]
    cells = {f"{r[2]} {r[5]} n={r[4]} c={r[3]}" for r in rows if r[5] != "geometric_mean"}
    table = run_cli("compare", base, changed, "--only-significant")
    assert table.returncode == 0, table.stderr
    return cells, table.stdout


def test_a_large_change_is_shown_by_both_and_the_rest_hidden_by_both(tmp_path):
    base, changed, base_suite, changed_suite = _saved(tmp_path, 3.0)
    theirs, hidden = pyperf_shown(base_suite, changed_suite)
    ours, table = ours_shown(base, changed)
    assert theirs == {"mysql cold n=1000 c=1", "zeo_fs warm n=1000 c=1"}
    assert ours == theirs
    assert hidden == 22
    assert "22 of 24 rows hidden (--only-significant): 22 not significant" in table


def test_pyperf_tests_each_cell_alone_and_zodbshootout_corrects_for_24(tmp_path):
    """2 of 24 cells 1.5x slower on a busy machine (±20 %): significant alone, not among 24."""
    base, changed, base_suite, changed_suite = _saved(tmp_path, 1.5)
    theirs, hidden = pyperf_shown(base_suite, changed_suite)
    assert theirs == {"mysql cold n=1000 c=1", "zeo_fs warm n=1000 c=1"}
    assert hidden == 22
    ours, table = ours_shown(base, changed)
    assert ours == set()
    assert (
        "24 of 24 rows hidden (--only-significant): 24 not significant after Holm's "
        "correction; 2 of them with p < 0.05 on its own, which a test of each cell alone "
        "(as pyperf compare_to does) would show."
    ) in table
    # Without the option, the raw p column is what pyperf's verdict follows: below 0.05
    # exactly in its two cells, and Holm's p is n.s. in every row.
    done = run_cli("compare", base, changed, "--format", "csv")
    rows = [line.split(",") for line in done.stdout.splitlines()[1:]]
    raw = {f"{r[2]} {r[5]} n={r[4]} c={r[3]}": float(r[9]) for r in rows if r[9]}
    assert {name for name, p in raw.items() if p < 0.05} == theirs
    # Holm's smallest threshold is 0.05 / 24: the raw p of 0.014 needed 0.0021.
    assert all(0.002 < raw[name] < 0.05 for name in theirs)
    assert all(r[11] == "false" for r in rows if r[5] != "geometric_mean")

"""Saved runs of etc/local.conf: show, compare, plot, pyperf, and surviving SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from zodbshootout.errors import UsageError
from zodbshootout.phases.classic import PHASES
from zodbshootout.results import file as resultfile

from conftest import ETC, run_cli

pytestmark = pytest.mark.zeo

LOCAL = str(ETC / "local.conf")
CELLS = 3 * len(PHASES)  # 3 databases × every phase


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two small runs of local.conf, saved with -o and --pyperf; their stdout kept: a's
    the classic table, b's the table as JSON (--format json)."""
    directory = tmp_path_factory.mktemp("runs")
    runs = {}
    for name, table in (("a", ()), ("b", ("--format", "json"))):
        done = run_cli(
            LOCAL,
            *("-n", "20", "-r", "2", "-q", *table),
            *("-o", str(directory / f"{name}.json")),
            *("--pyperf", str(directory / f"{name}.pyperf.json")),
        )
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        runs[name] = done.stdout
    return directory, runs


def test_saved_file_holds_raw_timings_and_metadata(two_runs):
    directory, _runs = two_runs
    result = resultfile.load(str(directory / "a.json"))
    assert result.databases == ["zeo_fs", "sqlite", "zeo_pcache"]
    # 3 databases × (warm-up + 2 repetitions) × every phase × 2 workers, each a raw duration.
    assert len(result.measurements) == 3 * 3 * len(PHASES) * 2
    assert sum(m.warmup for m in result.measurements) == 3 * len(PHASES) * 2
    assert all(m.warmup == (m.repetition == 0) for m in result.measurements)
    assert all(m.timing.seconds > 0 for m in result.measurements)
    metadata = result.metadata
    assert metadata["finished"] >= metadata["started"]
    assert metadata["options"]["object_counts"] == [20]
    assert metadata["environment"]["packages"]["ZODB"]
    assert "<zodb zeo_fs>" in metadata["config"]["text"]


def test_show_prints_exactly_what_the_run_printed(two_runs):
    directory, runs = two_runs
    shown = run_cli("show", str(directory / "a.json"), "-q")
    assert shown.returncode == 0, f"{shown.stdout}\n{shown.stderr}"
    assert shown.stdout == runs["a"]


def test_compare_two_runs_gives_ratio_and_significance_per_cell(two_runs):
    directory, _runs = two_runs
    done = run_cli("compare", str(directory / "a.json"), str(directory / "b.json"))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    cells = lines[1 : 1 + CELLS]
    for line in cells:
        assert any(word in line for word in ("x faster", "x slower", "same")), line
        assert line.split()[-4] in ("slower", "faster", "inconclusive")
    assert lines[-1].endswith(f"of {CELLS} tested cells differ significantly.")


def test_compare_a_run_with_itself_finds_no_difference(two_runs):
    directory, _runs = two_runs
    done = run_cli("compare", str(directory / "a.json"), str(directory / "a.json"))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert done.stdout.count("inconclusive  1.000  n.s.") == CELLS
    assert done.stdout.splitlines()[-1] == f"0 of {CELLS} tested cells differ significantly."


def test_plot_writes_a_png_with_a_bar_group_per_phase(two_runs):
    image = pytest.importorskip("matplotlib.image")
    directory, _runs = two_runs
    chart = directory / "chart.png"
    done = run_cli("plot", str(directory / "a.json"), "-o", str(chart))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    height, width, _channels = image.imread(str(chart)).shape
    assert width > 800
    assert height > 400


def test_real_pyperf_compares_the_exported_suites(two_runs):
    pytest.importorskip("pyperf")
    directory, _runs = two_runs
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyperf",
            "compare_to",
            "--table",
            str(directory / "a.pyperf.json"),
            str(directory / "b.pyperf.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "zeo_fs add n=20 c=2" in done.stdout or "not significant" in done.stdout
    stats = subprocess.run(
        [sys.executable, "-m", "pyperf", "stats", str(directory / "a.pyperf.json")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stats.returncode == 0, f"{stats.stdout}\n{stats.stderr}"
    assert f"Number of benchmarks: {CELLS}" in stats.stdout


def test_killed_run_keeps_the_databases_it_finished(tmp_path):
    """SIGKILL after the first round: the file holds it, complete and loadable."""
    output = tmp_path / "partial.json"
    env = dict(os.environ, ZODBSHOOTOUT_DATA=str(tmp_path / "data"))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "zodbshootout",
            LOCAL,
            "-n",
            "20",
            "-r",
            "2",
            "-q",
            "-o",
            str(output),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # its workers and servers share its process group
    )
    try:
        deadline = time.monotonic() + 120
        while not output.exists():
            assert process.poll() is None, "the run ended before saving anything"
            assert time.monotonic() < deadline, "no result file after 120 s"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert process.returncode == -signal.SIGKILL
    result = resultfile.load(str(output))
    # Saved after the first round: every database's warm-up and first
    # repetition, every phase × 2 workers each.
    for database in ("zeo_fs", "sqlite", "zeo_pcache"):
        mine = [m for m in result.measurements if m.database == database]
        assert sorted({m.repetition for m in mine}) == [0, 1], database
        assert len(mine) == 2 * len(PHASES) * 2, database
    assert "finished" not in result.metadata  # the run never got that far
    assert result.metadata["environment"]["cpu_count"] >= 1
    # No temporary file is left half-written beside it; only the -o claim's lock
    # (docs/safety.rst), which the next write of that name takes over and removes.
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != ".partial.json.lock")
    assert left == ["data", "partial.json"]


def test_dash_puts_the_result_on_stdout_instead_of_the_table():
    done = run_cli(LOCAL, "-n", "20", "-r", "1", "-q", "-o", "-", "sqlite_only_phase_check")
    # An unknown phase is refused before anything runs: nothing on stdout.
    assert done.returncode == 2
    assert done.stdout == ""
    done = run_cli(LOCAL, "-n", "20", "-r", "1", "-q", "-o", "-", "steamin")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    document = json.loads(done.stdout)
    assert document["format"] == "zodbshootout-result"
    result = resultfile.from_document(document)
    assert {m.phase for m in result.measurements} == {"steamin"}


def test_loading_a_table_json_is_refused(two_runs, tmp_path):
    _directory, runs = two_runs
    path = tmp_path / "table.json"
    path.write_text(runs["b"])  # the --format json table, printed by a run that succeeded
    assert json.loads(runs["b"])
    with pytest.raises(UsageError, match="not a zodbshootout result file"):
        resultfile.load(str(path))

"""benchmarks/floor.py, the tool against a bare ZODB loop: it runs and prints its ratios."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).parents[2] / "benchmarks" / "floor.py"


@pytest.mark.slow
def test_floor_prints_a_ratio_per_phase(tmp_path):
    options = ["--kinds", "filestorage", "-n", "30", "--rounds", "1", "-r", "1"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *options],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    row = next(line for line in done.stdout.splitlines() if line.startswith("filestorage "))
    ratios = [float(x) for x in re.findall(r"(\d+\.\d+) \[", row)]
    assert len(ratios) == 5  # add, update, cold, hot, steamin
    assert all(ratio > 0 for ratio in ratios)
    assert "load average" in done.stdout


def test_floor_refuses_an_unknown_kind(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--kinds", "oracle"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "unknown kinds: oracle" in done.stderr

"""benchmarks/floor.py, the tool against a bare ZODB loop: it runs and prints its ratios."""

from __future__ import annotations

import importlib.util
import pathlib
import re
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).parents[2] / "benchmarks" / "floor.py"


def _floor_module():
    spec = importlib.util.spec_from_file_location("floor_script", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # defines; main() runs only as a script
    return module


def test_floor_splits_the_repetitions_into_turns():
    turns = _floor_module().turns
    assert turns(10, 2) == [2, 2, 2, 2, 2]
    assert turns(10, 3) == [3, 3, 3, 1]
    assert turns(10, 0) == [10]  # each side in one go
    assert turns(1, 2) == [1]


@pytest.mark.slow
def test_floor_prints_a_ratio_per_phase(tmp_path):
    # Two turns of one repetition per side: two tool commands, whose samples add up.
    options = ["--kinds", "filestorage", "-n", "30", "--rounds", "1", "-r", "2", "--chunk", "1"]
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
    assert "-r 2 in turns of 1" in done.stdout
    assert "(2 + 2 samples;" in done.stdout  # each side's two turns pooled


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

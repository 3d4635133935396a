"""benchmarks/soak_memory.py in its short mode: the script works and its figures are the file's."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from support import configs

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow]

SCRIPT = pathlib.Path(__file__).parents[2] / "benchmarks" / "soak_memory.py"


def test_the_short_soak_reports_memory_file_size_and_checkpoints(tmp_path):
    config = tmp_path / "one.conf"
    config.write_text("%import zodbshootout\n%import relstorage\n" + configs.sqlite("sqlite"))
    kept = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(config), "--short", "--keep", str(kept)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ZODBSHOOTOUT_DATA": str(tmp_path)},
    )
    # 0: every bound holds; 1: one does not (a run of seconds can't show a
    # 10-minute file size): both print the figures.
    assert done.returncode in (0, 1), done.stdout + done.stderr
    out = done.stdout
    assert re.search(r"^coordinator\s+\d+\s+[\d.]+\s+[\d.]+\s+[+-][\d.]+$", out, re.M), out
    assert re.search(r"^worker\s+\d+\s+[\d.]+\s+[\d.]+\s+[+-][\d.]+$", out, re.M), out
    # The size it reports is the file's, and the seconds the file's record says.
    size_kb, seconds = re.search(r"result file: (\d+) KB for (\d+) s measured", out).groups()
    assert int(size_kb) == round(kept.stat().st_size / 1024)
    (record,) = json.loads(kept.read_text())["mix"]
    assert int(seconds) == round(record["seconds"])
    count, gap = re.search(r"checkpoints seen: (\d+), longest gap ([\d.]+) s", out).groups()
    assert int(count) >= 2  # every 2 s over 8 s
    assert float(gap) <= 2 + 0.5 + 2  # --checkpoint 2, sampled every 0.5 s, a busy machine

"""benchmarks/hosts_local.py, --hosts localhost against a plain run: it runs and prints ratios."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from support import configs

pytest.importorskip("execnet", reason="execnet is not installed (pip install '.[hosts]')")

SCRIPT = pathlib.Path(__file__).parents[2] / "benchmarks" / "hosts_local.py"


@pytest.mark.slow
def test_hosts_local_prints_a_ratio_per_cell(tmp_path):
    config = tmp_path / "one.conf"
    config.write_text(configs.sqlite("sqlite"))
    options = ["--rounds", "1", "--", "-n", "30", "-c", "2", "-r", "1", "add", "cold"]
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(config), *options],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # the script's scratch, too
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    rows = {
        line.split()[2]: line for line in done.stdout.splitlines() if line.startswith("sqlite ")
    }
    assert sorted(rows) == ["add", "cold"]
    for row in rows.values():
        median = float(row.split()[3])
        assert median > 0
        assert re.search(r"\d+\.\d\d-\d+\.\d\d$", row)
    assert "round 1: load" in done.stdout

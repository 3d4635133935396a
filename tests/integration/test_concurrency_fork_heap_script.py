"""benchmarks/fork_heap.py, forked against fresh workers: it runs and prints its ratios."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

SCRIPT = pathlib.Path(__file__).parents[2] / "benchmarks" / "fork_heap.py"


@pytest.mark.slow
@pytest.mark.parametrize("options", [[], ["--freeze"], ["--freeze", "--storage", "zeo"]])
def test_fork_heap_prints_a_ratio_per_phase(tmp_path, options):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "-n", "30", "-p", "2", *options],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    frozen = "frozen" if "--freeze" in options else "not frozen"
    assert re.search(rf"parent: preloads \(\d+ objects, {frozen}\)", done.stdout), done.stdout
    for phase in ("add", "update"):
        ratio = re.search(rf"{phase}: forked ÷ fresh (\d+\.\d+) \[", done.stdout)
        assert ratio, done.stdout
        assert float(ratio.group(1)) > 0, done.stdout
    assert "load average" in done.stdout
    # Each side's page faults and context switches in the timed region: a
    # ZEO client waits for its server at least once per commit.
    for side in ("fresh", "forked"):
        faults = re.search(rf"add_faults {side}: median (\d+)", done.stdout)
        assert faults, done.stdout
        assert int(faults.group(1)) > 0, done.stdout
        if "zeo" in options:
            switches = re.search(rf"add_switches {side}: median (\d+)", done.stdout)
            assert switches, done.stdout
            assert int(switches.group(1)) > 0, done.stdout

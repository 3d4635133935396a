"""The code stays ruff-clean, ruff-formatted and type-checks: the suite fails otherwise."""

import shutil
import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.parametrize(
    "command",
    [
        [sys.executable, "-m", "ruff", "check", "src", "tests", "docs", "benchmarks"],
        [sys.executable, "-m", "ruff", "format", "--check", "src", "tests", "docs", "benchmarks"],
        [sys.executable, "-m", "mypy"],
    ],
    ids=["ruff", "ruff-format", "mypy"],
)
def test_checker_is_clean(command):
    module = command[2]
    if (
        shutil.which(module) is None
        and subprocess.run(
            [sys.executable, "-c", f"import {module}"], capture_output=True
        ).returncode
    ):
        pytest.skip(f"{module} is not installed (pip install -e '.[test]')")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr

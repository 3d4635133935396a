"""A non-editable install records the commit it was installed from, or why it can't."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

PRINT_GIT = (
    "import json, zodbshootout.results.metadata as m; print(json.dumps(m.environment()['git']))"
)


@pytest.mark.slow
def test_a_non_editable_install_from_a_checkout_records_its_commit(tmp_path):
    if not (ROOT / ".git").exists():
        pytest.skip("not run from a git checkout")
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, "-c", PRINT_GIT],
        cwd=tmp_path,  # not the checkout: the record of the install must say it
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    git = json.loads(done.stdout)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert git["commit"] == head
    assert git["source"].startswith("installed (non-editable) from the checkout ")

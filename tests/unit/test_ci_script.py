""".ci/run runs the README's test command word for word and creates the venv once."""

from __future__ import annotations

import re

from conftest import ROOT

README_TEST_COMMAND = (
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest"
)


def _commands(script: str) -> list[str]:
    """The script's command lines (comments, blank lines and strings set aside)."""
    return [
        line.strip()
        for line in script.splitlines()
        if line.strip() and not line.strip().startswith("#") and "=" not in line.split()[0]
    ]


def test_ci_runs_the_readme_test_command_and_creates_the_venv_once():
    readme = (ROOT / "README.rst").read_text()
    script = (ROOT / ".ci" / "run").read_text()
    assert README_TEST_COMMAND in readme
    commands = _commands(script)
    assert README_TEST_COMMAND in commands
    assert sum(len(re.findall(r"-m venv\b", command)) for command in commands) == 1
    # It stops at the first failure, so failing tests make it exit non-zero.
    assert "set -euo pipefail" in script


def test_readme_names_the_quick_run_and_says_the_full_suite_takes_minutes():
    readme = " ".join((ROOT / "README.rst").read_text().split())
    assert "python -m pytest tests/unit" in readme
    assert "under a minute" in readme
    assert "takes several minutes" in readme


def test_ci_runs_the_tests_the_suite_skips_by_themselves():
    """Tests marked alone are skipped in the suite: CI runs them after it, alone (-n 0)."""
    script = (ROOT / ".ci" / "run").read_text()
    alone = "ZODBSHOOTOUT_ALONE=1 .venv/bin/python -m pytest -q -n 0 -m alone"
    assert script.index(README_TEST_COMMAND) < script.index(alone)
    marked = [
        path.name
        for path in (ROOT / "tests" / "integration").glob("test_*.py")
        if "mark.alone" in path.read_text()
    ]
    assert marked, "no test is marked alone: the CI step would run nothing"

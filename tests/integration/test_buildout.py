"""buildout.cfg works: a buildout of a copy of the checkout makes a working
``bin/zodbshootout`` (and only that), and ``buildout -c test.cfg`` adds ``bin/test``.

The buildout runs in a new virtual environment that sees the packages of the
environment running this test (its site-packages, or buildout's eggs when
bin/test runs it), except zodbshootout itself (so that buildout
has to use the copy's development egg, as it does in a fresh checkout), and
downloads from PyPI only what this environment lacks. That keeps the test
to well under two minutes; a real user's first buildout downloads everything.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import site
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.slow

# What a checkout holds that a fresh clone would not (or that is in the way).
IGNORED = shutil.ignore_patterns(
    ".git",
    ".venv",
    "bin",
    "eggs",
    "parts",
    "develop-eggs",
    ".installed.cfg",
    "var",
    "_build",
    "__pycache__",
    "*.egg-info",
    ".pytest_cache",
    ".ruff_cache",
    ".mypy_cache",
    ".hypothesis",
    "*.prof",
)


def run(args: list[str], cwd: pathlib.Path, timeout: float) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "ZODBSHOOTOUT_DATA", "VIRTUAL_ENV")
    }
    return subprocess.run(
        args,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def packages_view(target: pathlib.Path) -> pathlib.Path:
    """A directory of links to this environment's installed packages, zodbshootout excluded."""
    target.mkdir()
    for directory in site.getsitepackages():
        for entry in sorted(pathlib.Path(directory).iterdir()):
            name = entry.name.lower()
            if "zodbshootout" in name or name.endswith(".pth") or (target / entry.name).exists():
                continue
            (target / entry.name).symlink_to(entry)
    return target


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(checkout copy, its buildout output) after ``buildout`` ran there."""
    base = tmp_path_factory.mktemp("buildout")
    checkout = base / "checkout"
    shutil.copytree(ROOT, checkout, ignore=IGNORED, symlinks=True)
    venv = base / "venv"
    have_buildout = importlib.util.find_spec("zc.buildout") is not None
    # Without pip (and the old setuptools that comes with it) when this
    # environment's zc.buildout and setuptools will do.
    done = run(
        [
            sys.executable,
            "-m",
            "venv",
            *([] if not have_buildout else ["--without-pip"]),
            str(venv),
        ],
        base,
        120,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    python = venv / "bin" / "python"
    if not have_buildout:
        done = run([str(python), "-m", "pip", "install", "-q", "zc.buildout"], base, 300)
        if done.returncode != 0:
            pytest.skip(f"zc.buildout cannot be installed: {done.stderr.strip()[-300:]}")
    purelib = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], base, 60
    ).stdout.strip()
    view = packages_view(base / "packages")
    # Appended after the venv's own packages, so its zc.buildout (if any) wins.
    # Under buildout's own bin/test, the packages are eggs on sys.path instead.
    eggs = [entry for entry in sys.path if entry.endswith(".egg") and os.path.isdir(entry)]
    pathlib.Path(purelib, "zz_parent_packages.pth").write_text(
        "".join(f"{entry}\n" for entry in [str(view), *eggs])
    )
    buildout = [str(python), "-c", "import sys; from zc.buildout.buildout import main; main()"]
    done = run(buildout, checkout, 600)
    assert done.returncode == 0, done.stdout + done.stderr
    # What the default parts made, before the test part is asked for.
    scripts = sorted(path.name for path in (checkout / "bin").iterdir())
    done = run([*buildout, "-c", "test.cfg"], checkout, 600)
    assert done.returncode == 0, done.stdout + done.stderr
    return checkout, scripts


def test_default_buildout_makes_only_the_command(built):
    _checkout, scripts = built
    assert "zodbshootout" in scripts
    assert "test" not in scripts


def test_test_cfg_adds_the_test_runner_from_the_checkout(built):
    checkout, _scripts = built
    for script in ("zodbshootout", "test"):
        path = checkout / "bin" / script
        assert path.is_file(), f"bin/{script} missing"
        assert os.access(path, os.X_OK), f"bin/{script} is not executable"
        # The scripts import the checkout's own code (the development egg).
        assert f"'{checkout / 'src'}'" in path.read_text()


def test_bin_zodbshootout_prints_the_table_for_local_conf(built):
    checkout, _output = built
    done = run(["bin/zodbshootout", "etc/local.conf", "-n", "20", "-r", "1", "-q"], checkout, 300)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert [cell.strip() for cell in lines[0].split(",")] == [
        '"Transaction"',
        "zeo_fs",
        "sqlite",
        "zeo_pcache",
    ]
    rows = [line for line in lines[1:] if line.startswith('"')]
    assert [row.split('",')[0] + '"' for row in rows] == [
        '"Add 20 Objects"',
        '"Update 20 Objects"',
        '"Read 20 Warm Objects"',
        '"Read 20 Cold Objects"',
        '"Read 20 Prefetched Cold Objects"',
        '"Read 20 Hot Objects"',
        '"Read 20 Steamin\' Objects"',
        '"Open Connection (n=20)"',
    ]
    for row in rows:
        cells = [cell.strip() for cell in row.split('",')[1].split(",")]
        assert len(cells) == 3, row
        assert all(cell.isdigit() and int(cell) > 0 for cell in cells), row


def test_bin_test_runs_pytest_on_the_checkout(built):
    checkout, _output = built
    # A golden-file test, and a test that starts "python -m zodbshootout" in a
    # subprocess, which must find the same eggs as bin/test itself.
    # Named one by one, so that new tests in those files don't change the count.
    golden = "tests/unit/test_render_csv.py::"
    done = run(
        [
            "bin/test",
            "-q",
            "-p",
            "no:cacheprovider",
            golden + "test_classic_table_matches_golden",
            golden + "test_several_concurrency_levels_make_blocks",
            golden + "test_min_aggregate_takes_fastest_repetition",
            "tests/integration/test_cli_run.py::test_unknown_phase_is_a_usage_error",
        ],
        checkout,
        300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # Three golden-table tests and the subprocess one; nothing skipped.
    assert "4 passed" in done.stdout.splitlines()[-1], done.stdout
    assert "skipped" not in done.stdout.splitlines()[-1], done.stdout

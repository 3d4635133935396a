"""zodbshootout versions: a user's mistakes end in one line, exit 2, and nothing cached.

A requirement no release satisfies (asked of the real package index, with
pip: the installer used where uv is not on PATH), a Python that doesn't
exist, and a package index that can't be reached (a closed port on
loopback) each end before any run, with the reason in one line, and leave
no environment (complete or half-built) in the cache.  Then pip builds a
working environment, found again by the next invocation.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.slow]

LOCAL = str(ROOT / "etc" / "local.conf")


def versions(tmp: pathlib.Path, *words: str, path: str | None = None, **env: str):
    environment = {k: v for k, v in os.environ.items() if k != "ZODBSHOOTOUT_DATA"}
    environment["PATH"] = path if path is not None else environment.get("PATH", "")
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "zodbshootout", "versions", *words],
        cwd=tmp,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )


def cached(cache: pathlib.Path) -> list[str]:
    """What the cache holds besides lock files."""
    directory = cache / "environments"
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if not p.name.endswith(".lock"))


def assert_one_line_usage_error(done, *expected: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("zodbshootout versions: error: ")
    for text in expected:
        assert text in lines[0], lines[0]
    assert "Traceback" not in done.stderr
    assert not done.stdout


def test_a_requirement_no_release_satisfies(tmp_path):
    done = versions(
        tmp_path, LOCAL, "--installer", "pip", "--cache-dir", str(tmp_path / "cache"),
        "--with", "ZEO==0.404", "--with", "ZEO==6.2", "-q",
    )  # fmt: skip
    assert_one_line_usage_error(done, "ZEO==0.404: installing failed", "ZEO==0.404")
    assert cached(tmp_path / "cache") == []


def test_a_python_that_does_not_exist(tmp_path):
    done = versions(
        tmp_path, LOCAL, "--cache-dir", str(tmp_path / "cache"),
        "--with", "ZEO==6.1", "--with", "ZEO==6.2", "--python", "python3.99",
    )  # fmt: skip
    assert_one_line_usage_error(done, "--python python3.99: not found on PATH")
    assert not (tmp_path / "cache").exists()


def test_a_package_index_that_cannot_be_reached(tmp_path):
    import uv

    closed = "http://127.0.0.1:9/simple"  # the discard port: nothing listens on loopback
    done = versions(
        tmp_path, LOCAL, "--installer", "uv", "--cache-dir", str(tmp_path / "cache"),
        "--with", "ZEO==6.1", "--with", "ZEO==6.2", "-q",
        path=os.path.dirname(uv.find_uv_bin()) + os.pathsep + os.environ.get("PATH", ""),
        UV_INDEX_URL=closed, UV_DEFAULT_INDEX=closed, UV_OFFLINE="0",
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
    )  # fmt: skip
    assert_one_line_usage_error(done, "the package index could not be reached")
    assert cached(tmp_path / "cache") == []


def test_uv_asked_for_but_not_on_path(tmp_path):
    done = versions(
        tmp_path, LOCAL, "--installer", "uv", "--with", "a==1", "--with", "a==2",
        path=str(pathlib.Path(sys.executable).parent.parent / "no-such-bin"),
    )  # fmt: skip
    assert_one_line_usage_error(done, "--installer uv: uv is not on PATH")


def test_pip_builds_a_working_environment_once(tmp_path):
    """The default where uv is not on PATH: venv + pip, said in the output and the file.

    Two variants with the same requirements share one environment: the second
    finds the one the first built.
    """
    cache = tmp_path / "cache"
    without_uv = os.pathsep.join(
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if not (pathlib.Path(p) / "uv").exists()
    )
    done = versions(
        tmp_path, LOCAL, "--cache-dir", str(cache), "--rounds", "1", "-o", "pip.json",
        "--with", "a=ZEO==6.2", "--with", "b=ZEO==6.2",
        "--", "-n", "10", "-r", "1", "-c", "1", "add",
        path=without_uv,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "environments by pip" in done.stderr
    assert done.stderr.count("building its environment") == 1
    assert "b: environment found in the cache" in done.stderr
    document = json.loads((tmp_path / "pip.json").read_text())
    assert [v["installer"].split()[0] for v in document["variants"]] == ["pip", "pip"]
    assert [v["environment"]["built"] for v in document["variants"]] == [True, False]
    assert document["variants"][0]["packages"]["ZEO"] == "6.2"
    assert len(cached(cache)) == 1


def test_a_python_is_followed_to_its_real_interpreter():
    """A virtual environment's python (this test's own) names the interpreter it was made
    from: the one environments are made from, and part of their cache key."""
    from zodbshootout.versions.interpreter import find_interpreter

    found = find_interpreter(sys.executable)
    assert found.version == ".".join(map(str, sys.version_info[:3]))
    assert found.implementation == "CPython"
    real = pathlib.Path(found.executable).resolve()
    assert real == pathlib.Path(sys._base_executable).resolve()
    assert pathlib.Path(sys.prefix) not in real.parents  # not the environment's own python
    default = find_interpreter(None)
    assert (default.executable, default.version) == (found.executable, found.version)

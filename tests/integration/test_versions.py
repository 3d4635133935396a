"""zodbshootout versions for real: environments built from the package index, runs in them.

Two ZEO releases side by side on an embedded ZEO server (etc/local.conf's
zeo_fs, the database whose client and server the release is): the file names each
variant's exact ZEO (checked against the environment's own dist-info
folder), the rounds alternate (their recorded times), and a second
invocation finds the environments in the cache instead of building them
again (its output and the file say so, and the cache entry is untouched).
Then a variant with a known 4x slowdown of every storage load
(tests/support/slowdown.py, a wheel this module writes, installed as that
variant's requirement) trips ``--fail-if-slower``, which names the slowed
cell (a FileStorage's cold reads).

Environments are built with uv (a test requirement) into this module's own
cache directory, once for the module; uv's download cache is the user's, so
a second run of the suite downloads nothing.
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from support import configs, slowdown

pytestmark = [pytest.mark.slow, pytest.mark.zeo]

#: Two ZEO releases that both satisfy zodbshootout's own requirements on Python 3.11.
OLD, NEW = "6.1", "6.2"
#: The smallest runs that still measure: cold reads (every object from the storage).
SMALL = ["-n", "20", "-r", "1", "-c", "1", "cold"]


def uv_path() -> str:
    try:
        import uv
    except ImportError:
        pytest.skip("uv is not installed (pip install -e '.[test]')")
    return os.path.dirname(uv.find_uv_bin())


def versions(tmp: pathlib.Path, *words: str, env: dict[str, str] | None = None):
    """``zodbshootout versions ...`` in *tmp*, uv on PATH; the finished process."""
    environment = {
        **{k: v for k, v in os.environ.items() if k != "ZODBSHOOTOUT_DATA"},
        "PATH": uv_path() + os.pathsep + os.environ.get("PATH", ""),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "zodbshootout", "versions", *words],
        cwd=tmp,
        env=environment,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("versions-cache")


@pytest.fixture(scope="module")
def first(tmp_path_factory, cache_dir):
    """The two releases measured once: (process, file document, directory)."""
    tmp = tmp_path_factory.mktemp("versions")
    # One database, ZEO's: a round of all three of etc/local.conf's takes twice as long.
    config = tmp / "zeo.conf"
    config.write_text("%import zodbshootout\n" + configs.embedded_zeo("zeo_fs"))
    done = versions(
        tmp,
        str(config),
        *("--with", f"ZEO=={OLD}", "--with", f"ZEO=={NEW}"),
        *("--cache-dir", str(cache_dir), "--rounds", "2", "-o", "versions.json"),
        "--",
        *SMALL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done, json.loads((tmp / "versions.json").read_text()), tmp


def dist_info_version(environment: pathlib.Path, project: str) -> str:
    """A project's version as its installed dist-info folder is named (not importlib)."""
    prefix = f"{project.lower()}-"  # pip keeps the project's case, uv writes lower case
    found = [
        folder.name
        for folder in environment.glob("venv/lib/python*/site-packages/*.dist-info")
        if folder.name.lower().startswith(prefix)
    ]
    assert len(found) == 1, found
    return found[0][len(prefix) :].removesuffix(".dist-info")


def test_two_releases_side_by_side_name_their_exact_versions(first):
    done, document, _tmp = first
    variants = document["variants"]
    assert [v["name"] for v in variants] == [f"ZEO=={OLD}", f"ZEO=={NEW}"]
    for variant, version in zip(variants, (OLD, NEW), strict=True):
        assert variant["packages"]["ZEO"] == version
        path = pathlib.Path(variant["environment"]["path"])
        assert dist_info_version(path, "ZEO") == version
        assert variant["packages"]["ZODB"] == dist_info_version(path, "ZODB")
        assert variant["installer"].startswith("uv ")
        assert variant["environment"]["built"] is True
        # Each variant's run covers both of its rounds' repetitions.
        assert variant["result"]["repetitions"] == 2
    assert "environments by uv" in done.stderr
    # The table says which releases were compared, the comparison follows.
    assert re.search(rf"ZEO=={OLD} +3\.\d+\.\d+ +{OLD} +uv", done.stdout)
    assert f"change is ZEO=={NEW} relative to ZEO=={OLD}" in done.stdout


def test_rounds_are_interleaved(first):
    _done, document, _tmp = first
    rounds = document["rounds"]
    assert [(r["round"], r["variant"]) for r in rounds] == [
        (1, f"ZEO=={OLD}"),
        (1, f"ZEO=={NEW}"),
        (2, f"ZEO=={NEW}"),
        (2, f"ZEO=={OLD}"),
    ]
    # One after another, never overlapping: A B | B A in time.
    for before, after in itertools.pairwise(rounds):
        assert before["started"] < before["finished"] <= after["started"] < after["finished"]


def test_compare_reads_the_file_variant_against_variant(first):
    _done, _document, tmp = first
    done = subprocess.run(
        [sys.executable, "-m", "zodbshootout", "compare",
         f"versions.json#ZEO=={NEW}", f"versions.json#ZEO=={OLD}", "--format", "csv"],
        cwd=tmp, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    header, row = done.stdout.splitlines()[:2]
    assert header.startswith("base,changed,database,")
    assert row.startswith(f"ZEO=={NEW},ZEO=={OLD},zeo_fs,1,20,cold,")


def test_a_slowed_variant_fails_the_gate_and_the_cached_one_is_not_built_again(
    first, cache_dir, tmp_path
):
    _done, document, _tmp = first
    old = pathlib.Path(document["variants"][0]["environment"]["path"])
    record = old / "variant.json"
    stamp = record.stat().st_mtime_ns
    wheel = slowdown.build_wheel(tmp_path)
    # One FileStorage read by one worker thread: its loads are the wrapped calls, and
    # pure CPU work, so that a busy machine slows both variants alike (ZEO's round
    # trips wait on the scheduler, and vary tenfold more); one cell decides.
    config = tmp_path / "fs.conf"
    config.write_text("%import zodbshootout\n" + configs.filestorage("fs"))
    done = versions(
        tmp_path,
        str(config),
        *("--with", f"ZEO=={OLD}"),
        *("--with", f"slow=ZEO=={OLD},{slowdown.DISTRIBUTION} @ {wheel}"),
        *("--cache-dir", str(cache_dir), "--rounds", "2", "-o", "slow.json"),
        *("--fail-if-slower", "30"),
        "--",
        *("-n", "1000", "-r", "4", "-c", "1", "--threads", "cold"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(r"slow: fs, cold, 1000 objects, concurrency 1: \d+\.\d\dx slower", done.stderr)
    # The base variant came from the cache: said so, recorded so, its entry untouched.
    assert f"ZEO=={OLD}: environment found in the cache" in done.stderr
    assert f"ZEO=={OLD}: building" not in done.stderr
    saved = json.loads((tmp_path / "slow.json").read_text())
    assert saved["variants"][0]["environment"]["built"] is False
    assert saved["variants"][0]["environment"]["path"] == str(old)
    assert record.stat().st_mtime_ns == stamp
    assert saved["variants"][1]["packages"][slowdown.DISTRIBUTION] == slowdown.VERSION


def test_the_work_gate_names_a_variant_that_stops_prefetching(first, cache_dir, tmp_path):
    wheel = slowdown.build_wheel(tmp_path, slowdown.NO_PREFETCH)
    done = versions(
        tmp_path,
        str(ROOT / "etc" / "local.conf"),
        *("--with", f"ZEO=={OLD}"),
        *("--with", f"lazy=ZEO=={OLD},{slowdown.NO_PREFETCH.distribution} @ {wheel}"),
        *("--cache-dir", str(cache_dir), "--rounds", "1", "-o", "lazy.json"),
        *("--fail-if-more-work", "round_trips"),
        "--",
        *("-n", "20", "-r", "1", "-c", "1", "--work", "cold", "prefetch"),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    # Both embedded ZEO databases and SQLite batch a prefetch; without it, one per object.
    for database in ("zeo_fs", "sqlite", "zeo_pcache"):
        assert re.search(rf"^  lazy: {database}, prefetch, 20 objects\b", done.stderr, re.M), (
            done.stderr
        )
    assert not re.search(r"^  lazy: \S+, cold,", done.stderr, re.M), done.stderr


def test_mix_runs_in_every_variant(first, cache_dir, tmp_path):
    config = tmp_path / "fs.conf"
    config.write_text("%import zodbshootout\n" + configs.filestorage("fs"))
    done = versions(
        tmp_path,
        str(config),
        "--mix",
        *("--with", f"ZEO=={OLD}", "--with", f"ZEO=={NEW}"),
        *("--cache-dir", str(cache_dir), "--rounds", "1", "-o", "mix.json"),
        "--",
        *("-n", "50", "-d", "1", "--warmup", "0", "-c", "1", "--threads"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "mix.json").read_text())
    assert [v["name"] for v in document["variants"]] == [f"ZEO=={OLD}", f"ZEO=={NEW}"]
    for variant in document["variants"]:
        (record,) = variant["result"]["mix"]
        assert record["database"] == "fs"
        assert sum(o["count"] for o in record["operations"].values()) > 0
    assert "environment found in the cache" in done.stderr

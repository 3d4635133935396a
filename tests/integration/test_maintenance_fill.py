"""``zodbshootout fill``: exact garbage and revisions (walked), resumption, the refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from conftest import run_cli
from support import census, configs

pytestmark = [pytest.mark.slow]

OBJECTS = 10_000
GARBAGE = 0.2
REVISIONS = 3
SHAPE = ("--garbage", str(GARBAGE), "--revisions", str(REVISIONS), "-s", "100")


def _config(tmp_path, sections: str):
    path = tmp_path / "fill.conf"
    path.write_text("%import zodbshootout\n%import relstorage\n" + sections)
    return str(path)


def _check_census(found: census.Census) -> None:
    objects = found.benchmark_objects
    assert len(objects) == OBJECTS
    garbage = objects - found.reachable
    assert len(garbage) == int(OBJECTS * GARBAGE) == 2000
    assert set(found.revisions.values()) == {REVISIONS}


@pytest.mark.parametrize("kind", ["fs", "sqlite"])
def test_fill_writes_exactly_the_garbage_and_revisions_asked(tmp_path, kind):
    data = tmp_path / "data"
    section = configs.filestorage("fs") if kind == "fs" else configs.sqlite("sqlite")
    config = _config(tmp_path, section)
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    done = run_cli("fill", config, "-n", str(OBJECTS), *SHAPE, "--fanout", "32", env=env)
    assert done.returncode == 0, done.stderr
    assert f"{kind}: 10,000 objects (2,000 garbage, 3 revisions each): 10,000 written" in (
        done.stdout
    )
    assert "objects/s" in done.stdout
    if kind == "fs":
        found = census.census_of(census.filestorage, str(data / "fs.fs"))
    else:
        found = census.census_of(census.sqlite, str(data / "sqlite-sqlite"))
    _check_census(found)
    again = run_cli("fill", config, "-n", str(OBJECTS), *SHAPE, "--fanout", "32", env=env)
    assert again.returncode == 0, again.stderr
    assert "already there" in again.stdout


def test_an_interrupted_fill_continues_where_it_stopped(tmp_path):
    data = tmp_path / "data"
    config = _config(tmp_path, configs.sqlite("sqlite"))
    env = dict(os.environ, ZODBSHOOTOUT_DATA=str(data))
    command = [sys.executable, "-m", "zodbshootout", "fill", config, "-n", str(OBJECTS)]
    command += [*SHAPE, "--batch", "300"]
    child = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        first = child.stderr.readline()  # after the first batch
        assert "300/10,000 objects" in first, first
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=60) == 130, rest
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "interrupted; run it again to continue" in rest
    partial = census.census_of(census.sqlite, str(data / "sqlite-sqlite"))
    assert 0 < len(partial.benchmark_objects) < OBJECTS
    resumed = run_cli("fill", config, "-n", str(OBJECTS), *SHAPE, "--batch", "700", env=env)
    assert resumed.returncode == 0, resumed.stderr
    _check_census(census.census_of(census.sqlite, str(data / "sqlite-sqlite")))


def test_an_n_the_disk_cannot_hold_is_refused_before_writing(tmp_path):
    data = tmp_path / "data"
    config = _config(tmp_path, configs.filestorage("fs"))
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    done = run_cli("fill", config, "-n", "10000000000", "-s", "100000", env=env)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    for words in ("need about", "GB free", "lower -n"):
        assert words in line
    assert not (data / "fs.fs").exists()


def test_a_foreign_database_is_refused_untouched(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    path = str(data / "fs.fs")
    import ZODB

    db = ZODB.DB(census.filestorage(path))
    with db.transaction() as conn:
        conn.root()["app"] = 1
    db.close()
    before = os.path.getsize(path)
    config = _config(tmp_path, configs.filestorage("fs"))
    done = run_cli("fill", config, "-n", "100", env={"ZODBSHOOTOUT_DATA": str(data)})
    assert done.returncode == 2, done.stderr
    assert "did not write ('app')" in done.stderr
    assert "refusing to touch it" in done.stderr
    assert os.path.getsize(path) == before


def test_fill_needs_a_lasting_data_directory(tmp_path):
    config = _config(tmp_path, configs.filestorage("fs"))
    done = run_cli("fill", config, "-n", "100")
    assert done.returncode == 2
    assert "set ZODBSHOOTOUT_DATA" in done.stderr

"""``zodbshootout maintain``: pack removes exactly the fill's garbage, bytes are the files',
memory grows with the database, the fit prints, foreign data is refused, show reprints."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
import ZODB

from conftest import run_cli
from support import census, configs

pytestmark = [pytest.mark.slow]

SHAPE = ("--garbage", "0.2", "--revisions", "2")


def _config(tmp_path, sections: str):
    path = tmp_path / "maintain.conf"
    path.write_text("%import zodbshootout\n%import relstorage\n" + sections)
    return str(path)


def _sqlite_bytes(data_dir) -> int:
    """Pages in use of RelStorage's main SQLite file, read with sqlite3 itself."""
    with sqlite3.connect(str(data_dir / "main.sqlite3")) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    return (pages - free) * size


def _records(path):
    return json.loads(path.read_text())["maintenance"]


@pytest.mark.parametrize("kind", ["fs", "sqlite"])
def test_pack_removes_exactly_the_garbage_the_fill_made(tmp_path, kind):
    data = tmp_path / "data"
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    if kind == "fs":
        config = _config(tmp_path, configs.filestorage("fs"))
        where, opener = str(data / "fs.fs"), census.filestorage
    else:
        config = _config(tmp_path, configs.sqlite("sqlite"))
        where, opener = str(data / "sqlite-sqlite"), census.sqlite
    filled = run_cli("fill", config, "-n", "3000", *SHAPE, env=env)
    assert filled.returncode == 0, filled.stderr
    before = census.census_of(opener, where)
    assert len(before.benchmark_objects - before.reachable) == 600
    out = tmp_path / "pack.json"
    operations = ("--operations", "pack-nogc,pack")
    done = run_cli("maintain", config, *operations, *SHAPE, "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    after = census.census_of(opener, where)
    assert after.oids == before.reachable  # exactly the reachable objects are left
    nogc, record = _records(out)
    # Without garbage collection the history goes and every object stays.
    assert nogc["objects_before"] == nogc["objects_after"] == record["objects_before"]
    assert nogc["bytes_after"] < nogc["bytes_before"]
    assert record["objects"] == 3000
    assert record["objects_before"] - record["objects_after"] == 600
    assert record["objects_after"] == len(before.reachable)
    assert record["seconds"] > 0
    on_disk = os.path.getsize(where) if kind == "fs" else _sqlite_bytes(data / "sqlite-sqlite")
    assert record["bytes_after"] == on_disk
    assert not os.path.exists(where + ".old")  # the pack's backup is the tool's own: removed
    shown = run_cli("show", str(out))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == done.stdout


def test_a_bigger_database_packs_with_more_memory_and_the_sizes_are_fitted(tmp_path):
    # RelStorage's pack holds the objects' references in memory: more objects, more memory.
    config = _config(tmp_path, configs.sqlite("sqlite"))
    out = tmp_path / "sizes.json"
    command = ("maintain", config, "--sizes", "500,1000,15000", "--garbage", "0.2")
    done = run_cli(*command, "--operations", "reindex,pack", "-o", str(out), "-q")
    assert done.returncode == 0, done.stderr
    peaks = {r["objects"]: r["peak_rss_bytes"] for r in _records(out) if r["operation"] == "pack"}
    assert peaks[15000] > peaks[500] + 1_000_000, peaks
    line = next(line for line in done.stdout.splitlines() if "sqlite pack: time" in line)
    assert "k = " in line
    assert "95 % interval" in line
    assert "N = 500 … 15,000 (3 sizes)" in line
    # An operation the storage lacks is a footnote, not a number.
    assert "sqlite reindex: not applicable: only a FileStorage" in done.stdout


def test_maintain_refuses_a_foreign_database_untouched(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    path = str(data / "fs.fs")
    db = ZODB.DB(census.filestorage(path))
    with db.transaction() as conn:
        conn.root()["app"] = 1
    db.close()
    before = os.path.getsize(path)
    config = _config(tmp_path, configs.filestorage("fs"))
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    done = run_cli("maintain", config, "--operations", "reindex,pack", env=env)
    assert done.returncode == 2, done.stderr
    assert "did not write ('app')" in done.stderr
    assert os.path.getsize(path) == before
    assert os.path.exists(path + ".index")


def test_a_pack_under_a_mix_load_shows_the_foreground_before_during_and_after(tmp_path):
    config = _config(tmp_path, configs.sqlite("sqlite"))
    out = tmp_path / "load.json"
    command = ("maintain", config, "--sizes", "2000", "--garbage", "0.2", "--load-seconds", "7")
    done = run_cli(*command, "--operations", "pack,pack-under-load", "-o", str(out), "-q")
    assert done.returncode == 0, done.stderr
    alone, loaded = _records(out)
    assert (alone["operation"], loaded["operation"]) == ("pack", "pack-under-load")
    # Both packs start from the same garbage (the second after a refill) and remove it all.
    for record in (alone, loaded):
        assert record["objects_before"] - record["objects_after"] == 400
    load = loaded["load"]
    assert load["alone_seconds"] == alone["seconds"]
    for phase in ("before", "during"):
        assert load[phase]["intervals"] >= 1, load
        assert load[phase]["transactions_per_second"] > 0
        assert load[phase]["p99_ms"] > 0
    line = next(line for line in done.stdout.splitlines() if "foreground ycsb-b" in line)
    for words in ("before ", "during ", "after", "alone"):
        assert words in line

"""``zodbshootout maintain --operations gc``: zc.zodbdgc removes exactly the fill's garbage."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from support import census, configs

pytestmark = [pytest.mark.slow]


@pytest.mark.parametrize("kind", ["fs", "sqlite"])
def test_zodbdgc_removes_exactly_the_garbage_the_fill_made(tmp_path, kind):
    pytest.importorskip("zc.zodbdgc")
    data = tmp_path / "data"
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    config = tmp_path / "gc.conf"
    if kind == "fs":
        config.write_text("%import zodbshootout\n" + configs.filestorage("fs"))
        where, opener = str(data / "fs.fs"), census.filestorage
    else:
        config.write_text("%import relstorage\n" + configs.sqlite("sqlite"))
        where, opener = str(data / "sqlite-sqlite"), census.sqlite
    shape = ("--garbage", "0.2", "--revisions", "2")
    filled = run_cli("fill", str(config), "-n", "2000", *shape, env=env)
    assert filled.returncode == 0, filled.stderr
    before = census.census_of(opener, where)
    assert len(before.benchmark_objects - before.reachable) == 400
    out = tmp_path / "gc.json"
    done = run_cli("maintain", str(config), "--operations", "gc", *shape, "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    after = census.census_of(opener, where)
    assert after.oids == before.reachable  # exactly the reachable objects are left
    (record,) = json.loads(out.read_text())["maintenance"]
    assert record["gc_deleted"] == 400  # zodbdgc's own count
    assert record["objects_after"] == len(before.reachable)
    assert record["objects_before"] - record["objects_after"] == 400
    assert record["seconds"] > 0
    assert record["peak_rss_bytes"] > 0
    assert f"{kind} gc at 2,000 objects: zc.zodbdgc found 400 objects unreachable" in done.stdout

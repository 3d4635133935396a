"""``zodbshootout maintain --operations gc``: zc.zodbdgc removes exactly the fill's garbage."""

from __future__ import annotations

import json
import time

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


def test_garbage_committed_in_the_second_the_gc_starts_is_found_too(tmp_path):
    """zodbdgc cuts the history it examines at the wall clock's whole second; the tool
    cuts it after the newest transaction, so a fill just before the GC is all examined."""
    pytest.importorskip("zc.zodbdgc")
    from zodbshootout.config.loader import load_config
    from zodbshootout.maintenance.external_gc import Collection
    from zodbshootout.maintenance.fill import FillShape, fill

    path = tmp_path / "gc.conf"
    # Without GC in the packs around it, as the tool's maintain process opens it.
    storage = f"  <filestorage>\n    path {tmp_path}/gc.fs\n    pack-gc false\n  </filestorage>\n"
    path.write_text(f"<zodb fs>\n{storage}</zodb>\n")
    factory = load_config(str(path), str(tmp_path)).databases["fs"]
    time.sleep(1 - time.time() % 1)  # the fill and the GC in one second (50 ms here)
    db = factory.open()
    try:
        fill(db, 200, FillShape(garbage_share=0.2, revisions=2))
        collection = Collection(db, factory)
        collection.prepare()
        collection.run()
        found = collection.finish()
    finally:
        db.close()
    assert found["gc_deleted"] == 40  # zodbdgc's own cut found none of them

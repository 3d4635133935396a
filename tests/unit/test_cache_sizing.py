"""Caches sized from N unless the configuration set them; notes when they are too small."""

from __future__ import annotations

import pytest

from zodbshootout.config.keys import written
from zodbshootout.config.loader import ConfigSource, parse_source
from zodbshootout.database.cache_sizing import CacheWorkload, size_caches
from zodbshootout.storages import storage_factories
from zodbshootout.storages.base import MIB, OBJECT_OVERHEAD_BYTES


def pickle_cache_objects(count: int) -> int:
    return CacheWorkload(count, 128).pickle_cache_objects


def client_cache_bytes(count: int, size: int) -> int:
    return CacheWorkload(count, size).client_cache_bytes


def parse(text: str, tmp_path) -> dict:
    source = ConfigSource(
        text="%import zodbshootout\n%import relstorage\n" + text,
        url=(tmp_path / "t.conf").as_uri(),
        data_dir=str(tmp_path),
    )
    return parse_source(source).databases


def sized(factory, count: int, size: int = 128, readers: int = 1) -> list[str]:
    return size_caches(factory, CacheWorkload(count, size, readers))


ZEO = """
<zodb zeo>{db_line}
  <embeddedzeo>{zeo_line}
    <filestorage>
      path $(ZODBSHOOTOUT_DATA)/z.fs
    </filestorage>
  </embeddedzeo>
</zodb>
"""

SQLITE = """
<zodb sqlite>
  <relstorage>{line}
    <sqlite3>
      data-dir $(ZODBSHOOTOUT_DATA)/sqlite
    </sqlite3>
  </relstorage>
</zodb>
"""


def test_the_estimates_grow_with_count_size_and_readers():
    assert pickle_cache_objects(10000) == 11100
    one = CacheWorkload(1000, 128)
    assert one.data_bytes == 1000 * (128 + OBJECT_OVERHEAD_BYTES)
    assert CacheWorkload(1000, 128, readers=2).data_bytes == 2 * one.data_bytes
    assert one.client_cache_bytes == 2 * one.data_bytes + MIB


def test_defaults_are_raised_to_fit_and_never_lowered(tmp_path):
    factory = parse(ZEO.format(db_line="", zeo_line=""), tmp_path)["zeo"]
    zeo = next(iter(storage_factories(factory)))
    assert not written(factory.config, "cache-size")
    assert sized(factory, 1000) == []
    # 1000 objects fit ZODB's 5000 and ZEO's 20 MB: both stay.
    assert factory.config.cache_size == 5000
    assert zeo.config.cache_size == 20 * MIB
    assert sized(factory, 100000) == []
    assert factory.config.cache_size == pickle_cache_objects(100000)
    assert zeo.config.cache_size == client_cache_bytes(100000, 128) > 20 * MIB


def test_sizes_the_configuration_sets_are_kept_with_a_note(tmp_path):
    text = ZEO.format(db_line="\n  cache-size 5000", zeo_line="\n    cache-size 20MB")
    factory = parse(text, tmp_path)["zeo"]
    zeo = next(iter(storage_factories(factory)))
    assert written(factory.config, "cache-size")
    assert written(zeo.config, "cache-size")
    notes = sized(factory, 100000)
    assert factory.config.cache_size == 5000
    assert zeo.config.cache_size == 20 * MIB
    assert len(notes) == 2
    assert "cache-size 5000 objects" in notes[0]
    # The figure it falls short of, not N (which it may exceed and still be short).
    assert f"smaller than the {pickle_cache_objects(100000)} a worker's" in notes[0]
    assert "ZEO cache (cache-size) of 20 MB" in notes[1]
    assert "hot may measure the server" in notes[1]


def test_a_large_enough_explicit_size_needs_no_note(tmp_path):
    text = ZEO.format(db_line="\n  cache-size 200000", zeo_line="\n    cache-size 100MB")
    factory = parse(text, tmp_path)["zeo"]
    assert sized(factory, 100000) == []


def test_relstorage_local_cache_and_object_limit(tmp_path):
    factory = parse(SQLITE.format(line=""), tmp_path)["sqlite"]
    relstorage = next(iter(storage_factories(factory)))
    assert sized(factory, 100000, size=20000) == []
    needed = client_cache_bytes(100000, 20000)
    assert relstorage.config.cache_local_mb == -(-needed // MIB)
    assert relstorage.config.cache_local_object_max >= 20000


def test_relstorage_explicit_local_cache_is_kept_with_a_note(tmp_path):
    text = SQLITE.format(line="\n    cache-local-mb 10\n    cache-local-object-max 1000")
    factory = parse(text, tmp_path)["sqlite"]
    relstorage = next(iter(storage_factories(factory)))
    notes = sized(factory, 100000, size=2000)
    assert relstorage.config.cache_local_mb == 10
    assert relstorage.config.cache_local_object_max == 1000
    assert any("cache-local-mb" in note for note in notes)
    assert any("cache-local-object-max" in note for note in notes)


@pytest.mark.parametrize("count", [100, 20000])
def test_the_opened_database_has_the_sized_pickle_cache(tmp_path, count):
    text = "<zodb fs>\n<filestorage>\npath $(ZODBSHOOTOUT_DATA)/f.fs\n</filestorage>\n</zodb>"
    factory = parse(text, tmp_path)["fs"]
    sized(factory, count)
    db = factory.open()
    try:
        assert db.getCacheSize() == max(5000, pickle_cache_objects(count))
    finally:
        db.close()


def test_the_sizes_used_are_recorded_and_shown_by_verbose(tmp_path):
    from zodbshootout.database.cache_sizing import configured_cache_sizes
    from zodbshootout.render.description import format_description

    text = "%import zodbshootout\n%import relstorage\n" + ZEO.format(db_line="", zeo_line="")
    text += SQLITE.format(line="")
    source = ConfigSource(text=text, url=(tmp_path / "t.conf").as_uri(), data_dir=str(tmp_path))
    zeo = configured_cache_sizes(source, "zeo", CacheWorkload(100000, 128))
    assert zeo == {
        "pickle cache objects": pickle_cache_objects(100000),
        "ZEO cache": client_cache_bytes(100000, 128),
    }
    sqlite = configured_cache_sizes(source, "sqlite", CacheWorkload(1000, 128))
    assert sqlite == {"pickle cache objects": 5000, "RelStorage local cache": 10 * MIB}
    line = format_description("sqlite", {"database": "sqlite", "cache_sizes": {"1000": sqlite}})
    assert line == (
        "sqlite: sqlite, caches at n=1000: pickle cache 5,000 objects, "
        "RelStorage local cache 10.0 MiB"
    )

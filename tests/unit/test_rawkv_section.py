"""The <rawkv> section type and the plan of a raw store's stages (no processes)."""

from __future__ import annotations

import os

import pytest

from zodbshootout.config.loader import ConfigError, load_config
from zodbshootout.phases.classic import READ_PHASES, REGISTRY, Step
from zodbshootout.rawkv import is_rawkv
from zodbshootout.rawkv.stage import MEASURED, not_measured_reason, plan_stages

from support import configs


def test_rawkv_sections_are_columns_in_file_order(write_config, tmp_path):
    path = write_config(
        configs.rawkv("floor", "lmdb") + configs.filestorage("fs") + configs.rawkv("lite", "sqlite")
    )
    config = load_config(path, str(tmp_path))
    assert config.names == ["floor", "fs", "lite"]
    assert is_rawkv(config.databases["floor"])
    assert not is_rawkv(config.databases["fs"])
    spec = config.databases["floor"].spec()
    assert spec.backend == "lmdb"
    assert spec.path == os.path.join(str(tmp_path), "rawkv-lmdb-floor")
    assert spec.sync is True


def test_unknown_backend_is_a_config_error_with_its_line(write_config, tmp_path):
    path = write_config("<rawkv x>\n  backend rocksdb\n</rawkv>\n")
    with pytest.raises(ConfigError, match=r"test.conf:2: .*unknown rawkv backend 'rocksdb'"):
        load_config(path, str(tmp_path))


def test_backend_is_required(write_config, tmp_path):
    path = write_config("<rawkv x>\n</rawkv>\n")
    with pytest.raises(ConfigError, match="backend"):
        load_config(path, str(tmp_path))


def test_every_classic_read_phase_is_measured_or_explained():
    # Each classic read phase a floor can't measure says why in its own record.
    for phase in set(READ_PHASES) - set(MEASURED):
        assert REGISTRY[phase].raw_store_note, phase
    assert {"cold", "hot"} <= set(MEASURED)
    assert "pickle cache" in not_measured_reason("steamin")
    assert "benchmark" in not_measured_reason("tpc")


def test_a_phase_added_later_gets_a_reason_without_a_list_to_edit(monkeypatch):
    from zodbshootout.phases.record import READ as READ_STAGE
    from zodbshootout.phases.record import Phase
    from zodbshootout.rawkv.floor import not_applicable

    monkeypatch.setitem(REGISTRY, "chilly", Phase("chilly", READ_STAGE, run=lambda s, p: None))
    assert not_applicable(["cold", "chilly"]) == {
        "chilly": "a raw key-value store has no counterpart of ZODB's chilly phase"
    }


def test_hot_alone_reads_once_untimed_first():
    writes, reads = plan_stages(["hot"])
    assert writes == [Step("add", timed=False), Step("update", timed=False)]
    assert reads == [Step("cold", timed=False), Step("hot")]


def test_phases_without_meaning_plan_no_read_stage():
    _writes, reads = plan_stages(["add", "warm", "prefetch", "steamin"])
    assert reads == []


def test_etc_floors_conf_is_local_conf_plus_two_floors(tmp_path):
    from conftest import ETC

    config = load_config(str(ETC / "floors.conf"), str(tmp_path))
    local = load_config(str(ETC / "local.conf"), str(tmp_path))
    assert config.names == [*local.names, "lmdb", "sqlite_kv"]
    assert [config.databases[name].backend for name in ("lmdb", "sqlite_kv")] == ["lmdb", "sqlite"]


def test_the_backend_records_say_what_a_floor_can_do(write_config, tmp_path):
    import sqlite3

    from zodbshootout.rawkv import floor

    text = configs.rawkv("ldb", "leveldb") + configs.rawkv("lite", "sqlite")
    config = load_config(write_config(text), str(tmp_path))
    leveldb, lite = config.databases["ldb"], config.databases["lite"]
    assert floor.problem(leveldb, True, 2) == (
        "LevelDB can be opened by only one process at a time; measure it with -c 1"
    )
    assert floor.problem(leveldb, True, 1) is None
    assert floor.problem(lite, True, 4) is None
    assert floor.problem(lite, False, 1) == floor.PROCESSES_ONLY
    described = floor.describe(lite)
    assert described["library_version"] == sqlite3.sqlite_version
    assert described["size"] == {"method": "SQLite pages in use × page size"}

"""cachesim's pure parts: sizes and policies in, the seed's table out in every format."""

from __future__ import annotations

import argparse
import csv
import json

import pytest

from zodbshootout.cachesim.replay import group_name, parse_policies, parse_sizes
from zodbshootout.render.cachesim import format_size
from zodbshootout.render.formats import get_format
from zodbshootout.results.cachesim import GroupReport, HitCount, Outcome, Simulation


def test_sizes_are_powers_of_1024_like_zconfig():
    assert parse_sizes("64KB, 1MB,20mb,1.5MB,16384") == [65536, 1 << 20, 20 << 20, 1572864, 16384]


@pytest.mark.parametrize("text", ["", "1", "ten MB", "5TB", "1KB", "15KB", "100GB"])
def test_a_bad_or_too_small_size_says_which(text):
    with pytest.raises(argparse.ArgumentTypeError):
        parse_sizes(text)


@pytest.mark.parametrize("text", ["9" * 400, "9" * 400 + "KB", "1" + "0" * 30 + ".5GB"])
def test_a_size_too_large_for_a_float_is_refused_as_too_large(text):
    with pytest.raises(argparse.ArgumentTypeError, match="at most 64GB"):
        parse_sizes(text)


def test_policies_are_named_in_order_and_checked():
    assert parse_policies("lru, zeo,lru") == ["lru", "zeo"]
    with pytest.raises(argparse.ArgumentTypeError, match="arc: choose from zeo, relstorage, lru"):
        parse_policies("zeo,arc")


def test_size_labels():
    assert [format_size(s) for s in (512, 65536, 1 << 20, 1536 << 10, 200 << 20, 10**7)] == [
        "512 B",
        "64 KiB",
        "1 MiB",
        "1.5 MiB",
        "200 MiB",
        "9.54 MiB",
    ]


def test_a_runs_traces_are_grouped_by_database_count_concurrency_and_stage():
    assert group_name("/t/zeo_fs-n1000-c2-r3-read-w1.trace") == "zeo_fs-n1000-c2 read"
    assert group_name("/t/my-db-n5-c1-r1-write-w0.trace") == "my-db-n5-c1 write"
    assert group_name("/t/Financial1.spc.bz2") == "Financial1.spc.bz2"


def _simulation() -> Simulation:
    zeo = GroupReport(
        "zeo_fs-n10-c1 read",
        ["a.trace"],
        "zeo",
        kind="zeo",
        actual=HitCount(10, 5),
        actual_size_bytes=20 << 20,
        actual_phases={"hot": HitCount(4, 4)},
        simulated={
            ("zeo", 65536): Outcome(12, 3, 0.25),
            ("lru", 65536): Outcome(12, 6, 0.5),
        },
    )
    spc = GroupReport(
        "loop.spc",
        ["loop.spc"],
        "spc",
        simulated={("zeo", 65536): Outcome(4, 0, 1.0), ("lru", 65536): Outcome(4, 4, 2.0)},
    )
    versions = {"zeo": "6.2", "lru": "5.5"}
    packages = {"zeo": "ZEO", "lru": "cachetools"}
    return Simulation([zeo, spc], [65536], ["zeo", "lru"], versions, [], packages)


def test_table_has_the_seeds_columns_and_an_actual_row_under_its_policy():
    assert get_format("table").simulation(_simulation()) == [
        "Trace                  Cache size  Loads  Hits zeo  Hits lru  Time zeo  Time lru",
        "--------------------------------------------------------------------------------",
        "zeo_fs-n10-c1 read  actual 20 MiB     10    50.0 %",
        "zeo_fs-n10-c1 read         64 KiB     12    25.0 %    50.0 %   0.250 s   0.500 s",
        "loop.spc                   64 KiB      4     0.0 %   100.0 %   1.000 s   2.000 s",
        "",
        "versions: zeo: ZEO 6.2, lru: cachetools 5.5",
        "actual: the traced cache's own hits and size, under the policy that simulates it; "
        "the simulations start empty and are never cleared",
    ]


def test_csv_has_numbers_in_cells():
    rows = list(csv.reader(get_format("csv").simulation(_simulation())))
    assert rows[0] == [
        "trace",
        "source",
        "cache_size_bytes",
        "loads",
        "hit_rate_zeo",
        "hit_rate_lru",
        "seconds_zeo",
        "seconds_lru",
    ]
    assert rows[1] == ["zeo_fs-n10-c1 read", "actual", str(20 << 20), "10", "0.5000", "", "", ""]
    assert rows[3] == [
        "loop.spc",
        "simulated",
        "65536",
        "4",
        "0.0000",
        "1.0000",
        "1.0000",
        "2.0000",
    ]


def test_json_keeps_the_versions_and_each_phases_actual_counts():
    document = json.loads("\n".join(get_format("json").simulation(_simulation())))
    assert document["versions"] == {"zeo": "6.2", "lru": "5.5"}
    actual = document["rows"][0]
    assert actual["source"] == "actual"
    assert actual["kind"] == "zeo"
    assert actual["phases"] == {"hot": {"loads": 4, "hits": 4, "hit_rate": 1.0}}
    assert document["rows"][1]["hit_rate"] == {"zeo": 0.25, "lru": 0.5}


def test_markdown_is_a_table_with_notes():
    lines = get_format("markdown").simulation(_simulation())
    assert lines[0] == "| Trace | Cache size | Loads | Hits zeo | Hits lru | Time zeo | Time lru |"
    assert lines[1] == "|---|---:|---:|---:|---:|---:|---:|"
    assert lines[-2] == "- versions: zeo: ZEO 6.2, lru: cachetools 5.5"

"""insight: cache hit rates, bytes per object and index keys/s from a known RunResult."""

from __future__ import annotations

from zodbshootout.render.insight import (
    BYTES_PER_OBJECT,
    CACHE_HIT_RATE,
    INDEX_KEYS_PER_SECOND,
    insight_rows,
)
from zodbshootout.results.record import CellKey, Failure, Measurement, PhaseTiming, RunResult


def _timing(phase, worker, loads, hits, growth=None):
    return PhaseTiming(
        phase, worker, 0.1, 100, loads, loads - (hits or 0), hits, storage_growth_bytes=growth
    )


def _result(index_entries=0):
    measurements = []
    for repetition in (1, 2):
        for worker in (0, 1):
            growth = 30_000 + 1000 * repetition if worker == 0 else None
            measurements += [
                Measurement("zeo", 2, 100, repetition, _timing("add", worker, 0, 0, growth)),
                Measurement("zeo", 2, 100, repetition, _timing("cold", worker, 103, 0)),
                Measurement("zeo", 2, 100, repetition, _timing("hot", worker, 103, 103)),
                Measurement("fs", 2, 100, repetition, _timing("add", worker, 0, None)),
                Measurement("fs", 2, 100, repetition, _timing("cold", worker, 103, None)),
            ]
    return RunResult(
        databases=["zeo", "fs"],
        object_counts=[100],
        concurrencies=[2],
        phases=["add", "cold", "hot"],
        repetitions=2,
        measurements=measurements,
        failures=[Failure("fs", 2, 100, ("hot",), "worker 1 died")],
        metadata={
            "index_entries": index_entries,
            "databases": {
                "zeo": {"kind": "zeo", "size": {"method": "file length"}},
                "fs": {"kind": "filestorage", "size": {"unknown": "no file"}},
            },
        },
    )


def _by_kind(rows, kind):
    return {row.phase: row for row in rows if row.kind == kind}


def test_hit_rates_count_every_worker_and_repetition():
    footnotes = []
    rows = _by_kind(insight_rows(_result(), 2, {}, footnotes), CACHE_HIT_RATE)
    assert list(rows) == ["cold", "hot"]
    cold_zeo, cold_fs = rows["cold"].cells
    assert (cold_zeo.value, cold_zeo.text, cold_zeo.detail) == (
        0.0,
        "0.0 %",
        {"hits": 0, "misses": 412},
    )
    hot_zeo, hot_fs = rows["hot"].cells
    assert (hot_zeo.value, hot_zeo.text) == (1.0, "100.0 %")
    assert rows["hot"].label == "Read 100 Hot Objects: cache hit rate"
    # No client cache, and a failed cell: footnotes, not numbers.
    assert cold_fs.value is None
    assert footnotes[cold_fs.footnote - 1] == (
        "fs: no client cache between the connections and the storage"
    )
    assert hot_fs.value is None
    assert footnotes[hot_fs.footnote - 1] == ("fs (concurrency 2): worker 1 died")


def test_bytes_per_object_is_growth_over_the_objects_written():
    footnotes = []
    add = _by_kind(insight_rows(_result(), 2, {}, footnotes), BYTES_PER_OBJECT)["add"]
    zeo, fs = add.cells
    # (31000 + 32000) bytes over 2 repetitions × 2 workers × 100 objects.
    assert zeo.value == 63_000 / 400
    assert zeo.text == "158 B"
    assert zeo.detail == {"growth_bytes": 63_000, "objects": 400, "method": "file length"}
    assert fs.value is None
    assert footnotes[fs.footnote - 1] == "fs: no file"


def test_index_keys_are_the_container_entry_plus_k_entries_per_object():
    footnotes = []
    rates = {CellKey("zeo", 2, 100, "add"): 1000.0, CellKey("fs", 2, 100, "add"): None}
    rows = insight_rows(_result(index_entries=2), 2, rates, footnotes)
    add = _by_kind(rows, INDEX_KEYS_PER_SECOND)["add"]
    assert add.label == "Add 100 Objects: index keys/s (1 + 2 per object)"
    assert add.cells[0].value == 3000.0
    assert add.cells[1].value is None


def test_no_index_rows_without_index_entries():
    assert not _by_kind(insight_rows(_result(), 2, {}, []), INDEX_KEYS_PER_SECOND)


def test_memcached_rows_use_worker_0s_server_wide_counts():
    import dataclasses

    result = _result()
    shared = []
    for m in result.measurements:
        if m.database == "zeo" and m.phase == "cold" and m.timing.worker == 0:
            timing = dataclasses.replace(m.timing, shared_cache_hits=30, shared_cache_misses=10)
            m = dataclasses.replace(m, timing=timing)
        shared.append(m)
    result.measurements = shared
    footnotes = []
    rows = _by_kind(insight_rows(result, 2, {}, footnotes), "shared_cache_hit_rate")
    zeo, fs = rows["cold"].cells
    assert (zeo.value, zeo.detail) == (0.75, {"hits": 60, "misses": 20})
    assert rows["cold"].label == "Read 100 Cold Objects: memcached hit rate (server-wide)"
    assert footnotes[fs.footnote - 1] == "fs: no shared cache (memcached) whose servers count gets"
    assert rows["hot"].cells[0].text == "n/a"


def test_the_classic_csv_has_no_insight_rows_nor_their_footnotes():
    from zodbshootout.render.csv import format_csv
    from zodbshootout.render.markdown import format_markdown

    result = _result()
    csv_text = "\n".join(format_csv(result))
    assert "cache hit rate" not in csv_text
    assert "no client cache" not in csv_text
    assert "[1] fs (concurrency 2): worker 1 died" in csv_text
    # Index keys/s are rates: the csv has them.
    keyed = format_csv(_result(index_entries=2))
    assert any(
        line.startswith('"Add 100 Objects: index keys/s (1 + 2 per object)"') for line in keyed
    )
    markdown = "\n".join(format_markdown(result))
    assert "| Read 100 Hot Objects: cache hit rate" in markdown
    assert "fs: no client cache between the connections and the storage" in markdown


def test_verbose_line_of_a_floor():
    from zodbshootout.render.description import format_description

    info = {
        "kind": "rawkv",
        "backend": "lmdb",
        "library_version": "1.7.5",
        "sync": True,
        "path": "/data/rawkv-lmdb-floor",
    }
    assert format_description("floor", info) == (
        "floor: raw key-value floor, lmdb 1.7.5, sync, /data/rawkv-lmdb-floor"
    )


def test_threads_sharing_a_db_count_hits_once_for_all_workers():
    # With --threads shared, only worker 0 records the shared cache's hits.
    measurements = [
        Measurement("zeo", 2, 100, 1, _timing("hot", 0, 103, 206)),
        Measurement("zeo", 2, 100, 1, _timing("hot", 1, 103, None)),
    ]
    result = RunResult(["zeo"], [100], [2], ["hot"], 1, measurements=measurements)
    (row,) = insight_rows(result, 2, {}, [])
    assert (row.cells[0].value, row.cells[0].detail) == (1.0, {"hits": 206, "misses": 0})


def test_a_growth_below_one_extent_gets_a_note_instead_of_a_misleading_figure():
    """InnoDB grows by 1 MiB extents: 200 small objects may grow it by 0 bytes."""
    result = _result()
    result.metadata["databases"]["zeo"]["size"] = {
        "method": "InnoDB data_length + index_length",
        "granularity_bytes": 1 << 20,
    }
    footnotes = []
    add = _by_kind(insight_rows(result, 2, {}, footnotes), BYTES_PER_OBJECT)["add"]
    zeo = add.cells[0]
    assert zeo.value is None
    assert zeo.detail["growth_bytes"] == 63_000
    assert footnotes[zeo.footnote - 1] == (
        "zeo: its size grows in 1 MiB extents, and no repetition of this phase grew it "
        "by one (200 objects): run more objects (-n) for a figure"
    )

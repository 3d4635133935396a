"""A mix run's series as the charts read them: counters as rates, workers summed, panels."""

from __future__ import annotations

import pytest

from zodbshootout.results.mix import COUNTER_FIELDS, GAUGE_FIELDS, MixRecord, is_counter
from zodbshootout.results.mix_series import (
    chosen,
    panels,
    rates,
    split_name,
)


def _record(series: dict) -> MixRecord:
    return MixRecord.from_data(
        {
            "database": "db",
            "concurrency": 2,
            "seconds": 1.0,
            "operations": {},
            "intervals": [],
            "interval_seconds": 0.5,
            "series": series,
        }
    )


def _series(unit, t, values):
    return {"unit": unit, "t": t, "values": values}


def test_every_field_a_sampler_reads_is_a_counter_or_a_gauge():
    from zodbshootout.storages.relstorage import samplers
    from zodbshootout.storages.zeo.kind import _STATUS

    fields = {name for name, _unit in samplers._PG_DATABASE_UNITS}
    fields |= {"live_rows", "dead_rows", "connections", "waiting_on_locks", "locks"}
    fields |= {name for name, _unit in samplers._MYSQL_STATUS.values()}
    fields |= {"history_list_length", *_STATUS, *samplers._MEMCACHED_STATS}
    # The client's (probes/series.py and the kinds' client_cache_series).
    fields |= {"pickle_cache_objects", "pickle_cache_bytes", "rss", "client_cache_objects"}
    fields |= {"client_cache_bytes", "client_cache_hits", "client_cache_misses"}
    fields |= {"client_cache_fills", "loads", "cache_hits", "cpu_wait_ratio"}
    fields |= {"client_cache_index_depth"}
    # The runner's machine samplers.
    fields |= {"cpu_pressure", "load_1min"}
    assert not COUNTER_FIELDS & GAUGE_FIELDS
    assert fields <= COUNTER_FIELDS | GAUGE_FIELDS, fields - (COUNTER_FIELDS | GAUGE_FIELDS)


@pytest.mark.parametrize(
    ("name", "split"),
    [
        ("client.3.rss", ("client", "rss")),
        ("zeo.commits", ("zeo", "commits")),
        ("postgresql.object_state.dead_rows", ("postgresql", "object_state.dead_rows")),
        ("memcached 127.0.0.1:11211.get_hits", ("memcached 127.0.0.1:11211", "get_hits")),
    ],
)
def test_a_name_splits_into_its_source_and_field(name, split):
    assert split_name(name) == split


def test_a_table_s_rows_are_a_gauge_and_temp_bytes_a_counter():
    assert not is_counter("object_state.dead_rows")
    assert is_counter("temp_bytes")
    assert not is_counter("bytes")


def test_a_counter_s_rate_is_its_growth_per_second_between_samples():
    assert rates([0.0, 0.5, 1.0, 1.0, 2.0], [10, 20, 20, 25, 5]) == ([0.5, 1.0], [20.0, 0.0])


def test_the_workers_series_are_added_up_and_each_server_is_a_panel_per_kind_and_unit():
    record = _record(
        {
            "client.0.rss": _series("bytes", [0.0, 0.5, 1.0], [100, 110, 120]),
            "client.1.rss": _series("bytes", [0.01, 0.49, 1.02], [200, 210, 230]),
            "client.0.client_cache_hits": _series("loads", [0.0, 0.5, 1.0], [0, 5, 20]),
            "client.1.client_cache_hits": _series("loads", [0.0, 0.5, 1.0], [0, 5, 10]),
            "zeo.commits": _series("transactions", [-0.1, 0.4, 0.9], [7, 12, 12]),
            "zeo.waiting": _series("transactions", [-0.1, 0.4, 0.9], [0, 2, 1]),
            "zeo.stores": _series("stores", [-0.1, 0.4, 0.9], [0, 1, 2]),
        }
    )
    assert chosen(record) == [
        "client.rss",
        "client.client_cache_hits",
        "zeo.commits",
        "zeo.waiting",
    ]
    by_title = {panel.title: panel for panel in panels(record)}
    assert list(by_title) == [
        "client: bytes",
        "client: loads/s",
        "zeo: transactions/s",
        "zeo: transactions",
    ]
    (rss,) = by_title["client: bytes"].lines
    assert rss.values == (300, 320, 350)
    assert rss.t == (0.01, 0.5, 1.02)
    (hits,) = by_title["client: loads/s"].lines
    assert hits.values == pytest.approx((20.0, 40.0), rel=0.1)
    (commits,) = by_title["zeo: transactions/s"].lines
    assert commits.values == pytest.approx((10.0, 0.0))
    assert by_title["zeo: transactions"].lines[0].values == (0, 2, 1)
    # Every series, or those of one source.
    assert len(chosen(record, ["*"])) == 5
    assert chosen(record, ["zeo.*"]) == ["zeo.commits", "zeo.waiting", "zeo.stores"]

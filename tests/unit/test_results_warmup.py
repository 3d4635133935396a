"""results.warmup: each start's curve from the intervals and the workers' load counters."""

from __future__ import annotations

from zodbshootout.results import warmup
from zodbshootout.results.mix import MixRecord


def _record(restart=None) -> MixRecord:
    # One worker: 10 loads a second; hits 0, then 5, then 10 of them (a cache warming).
    loads = [0, 10, 20, 30, 40]
    hits = [0, 0, 5, 15, 25]
    return MixRecord.from_data(
        {
            "database": "db",
            "concurrency": 1,
            "seconds": 4.0,
            "operations": {"read": {"count": 40, "latency": ""}},
            "intervals": [
                {"transactions": 10, "p50_us": 100.0, "p99_us": p * 1000.0, "max_us": 1e4}
                for p in (8.0, 4.0, 2.0, 1.0)
            ],
            "interval_seconds": 1.0,
            "series": {
                # Sampled when the worker closed each interval, a little after it.
                "client.0.loads": {
                    "unit": "loads",
                    "t": [0.0, 1.01, 2.02, 3.01, 4.0],
                    "values": loads,
                },
                "client.0.cache_hits": {
                    "unit": "loads",
                    "t": [0.0, 1.01, 2.02, 3.01, 4.0],
                    "values": hits,
                },
            },
            "restart": restart,
        }
    )


def test_the_curve_is_the_hit_rate_and_p99_of_each_second_since_the_start():
    starts = [{"open_seconds": 0.2, "first_transaction_seconds": 0.004}]
    (curve,) = warmup.curves(_record(), starts)
    assert curve["stage"] == 0
    assert curve["open_seconds"] == 0.2
    assert [p["seconds"] for p in curve["points"]] == [1, 2, 3, 4]
    assert [p["hit_rate"] for p in curve["points"]] == [0.0, 0.5, 1.0, 1.0]
    assert [p["p99_ms"] for p in curve["points"]] == [8.0, 4.0, 2.0, 1.0]
    assert warmup.describe(curve).startswith(
        "warm-up from the start: open 0.20 s, first transaction 4.0 ms later;"
    )


def test_a_restart_starts_a_second_curve_at_its_interval():
    starts = [{"open_seconds": 0.2}, {"open_seconds": 0.9}]
    curves = warmup.curves(_record({"after_interval": 2, "gap_seconds": 0.0}), starts)
    assert [c["stage"] for c in curves] == [0, 1]
    assert [p["seconds"] for p in curves[1]["points"]] == [1, 2]
    assert curves[1]["open_seconds"] == 0.9
    assert [p["hit_rate"] for p in curves[1]["points"]] == [1.0, 1.0]


def test_side_by_side_puts_each_database_in_a_column():
    cold = warmup.curves(_record(), [{"open_seconds": 0.1}])
    lines = warmup.side_by_side([("cold", cold), ("warm", cold)], 0)
    assert lines[0].split() == ["s", "cold", "warm"]
    assert lines[1].split() == ["open", "0.10", "s", "0.10", "s"]
    assert lines[2].split() == ["1", "0%", "8.0ms", "0%", "8.0ms"]


def test_startup_takes_the_slowest_worker():
    reports = [
        {"open_seconds": 0.1, "first_transaction_seconds": 0.01},
        {"open_seconds": 0.3, "first_transaction_seconds": None},
    ]
    assert warmup.startup(reports) == {"open_seconds": 0.3, "first_transaction_seconds": 0.01}

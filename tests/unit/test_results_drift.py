"""results.drift: the slope and its interval, the series ranked, the restart's verdict."""

from __future__ import annotations

import random

import pytest

from zodbshootout.results import drift
from zodbshootout.results.mix import MixRecord, join_stages


def _record(rates, p99_ms=None, series=None, restart=None) -> MixRecord:
    p99_ms = p99_ms or [2.0 for _ in rates]
    return MixRecord.from_data(
        {
            "database": "db",
            "concurrency": 2,
            "seconds": float(len(rates)),
            "operations": {"read": {"count": int(sum(rates)), "latency": ""}},
            "intervals": [
                {"transactions": int(rate), "p50_us": 1000.0, "p99_us": p * 1000, "max_us": 1e4}
                for rate, p in zip(rates, p99_ms, strict=True)
            ],
            "interval_seconds": 1.0,
            "series": series or {},
            "restart": restart,
        }
    )


@pytest.mark.parametrize(
    ("p", "df", "table"),
    # Student's t from printed tables (two-sided 95 %, 99 %).
    [(0.975, 1, 12.706), (0.975, 5, 2.571), (0.975, 10, 2.228), (0.975, 30, 2.042),
     (0.995, 20, 2.845), (0.975, 1e6, 1.960)],
)  # fmt: skip
def test_t_quantile_matches_the_printed_tables(p, df, table):
    assert drift.t_quantile(p, df) == pytest.approx(table, abs=2e-3)


def test_a_steady_noisy_run_is_steady_and_names_no_cause():
    rng = random.Random(1)
    rates = [1000 + rng.gauss(0, 80) for _ in range(120)]
    # A series that wanders on its own must not be named without a drift.
    rss = {"unit": "bytes", "t": list(range(121)), "values": [1e8 + i * 1e5 for i in range(121)]}
    found = drift.drift(_record(rates, series={"client.0.rss": rss}))
    assert found["verdict"] == "steady"
    assert found["moved_with"] == []
    low, high = found["throughput"]["ci95"]
    assert low < 0 < high or abs(found["throughput"]["change"]) < drift.MATERIAL_CHANGE
    assert drift.describe(found, 120).startswith("drift: steady over 2 min, no decay: throughput")


def test_autocorrelated_wander_widens_the_interval():
    """A random walk around a level: far fewer independent intervals than intervals."""
    rng = random.Random(4)
    level, rates = 0.0, []
    for _ in range(200):
        level = 0.9 * level + rng.gauss(0, 30)
        rates.append(1000 + level)
    line = drift.fit([float(t) for t in range(200)], rates)
    assert line is not None
    assert line.effective_n < 60  # ρ near 0.9: n(1-ρ)/(1+ρ) ≈ 10


def test_a_decay_is_found_and_the_series_that_grew_with_it_ranked_first():
    n = 60
    rates = [1000 - 8 * i for i in range(n)]  # -48 % over the run
    grows = {"unit": "objects", "t": list(range(n + 1)), "values": [100 * i for i in range(n + 1)]}
    flat = {"unit": "connections", "t": list(range(n + 1)), "values": [3] * (n + 1)}
    # A counter that only follows the throughput: per transaction, flat.
    commits = [0]
    for rate in rates:
        commits.append(commits[-1] + rate)
    follows = {"unit": "transactions", "t": list(range(n + 1)), "values": commits}
    series = {"client.0.pickle_cache_objects": grows, "pg.connections": flat, "pg.commits": follows}
    found = drift.drift(_record(rates, series=series))
    assert found["verdict"] == "decaying"
    assert found["throughput"]["change"] == pytest.approx(-0.63, abs=0.05)
    names = [entry["series"] for entry in found["moved_with"]]
    assert names == ["client.0.pickle_cache_objects"]
    assert found["moved_with"][0]["r"] == pytest.approx(-1.0, abs=1e-6)
    sentence = drift.describe(found, n)
    assert "moved with it: client.0.pickle_cache_objects" in sentence


def test_a_drop_halfway_is_a_decay_a_few_slow_seconds_are_not():
    rng = random.Random(5)
    drop = [1000 + rng.gauss(0, 20) for _ in range(30)] + [
        300 + rng.gauss(0, 20) for _ in range(30)
    ]
    assert drift.drift(_record(drop))["verdict"] == "decaying"
    # Slow seconds near the end tilt the line; the thirds' medians don't follow.
    spikes = [1000 + rng.gauss(0, 20) for _ in range(60)]
    for index in (52, 55, 58, 59):
        spikes[index] = 50
    assert drift.drift(_record(spikes))["verdict"] == "steady"


def test_a_rising_throughput_is_no_decay():
    """A warm-up, or a machine that freed up: said, never an alarm, no cause named."""
    rates = [500 + 10 * i for i in range(40)]
    found = drift.drift(_record(rates))
    assert found["verdict"] == "steady"
    assert found["improved"] == ["throughput"]
    assert found["moved_with"] == []
    assert "throughput rose" in drift.describe(found, 40)


def test_a_p99_that_triples_is_a_decay_and_its_change_a_ratio():
    rng = random.Random(3)
    n = 60
    p99 = [2.0 * 3 ** (i / (n - 1)) * (1 + rng.uniform(-0.05, 0.05)) for i in range(n)]
    found = drift.drift(_record([1000.0] * n, p99_ms=p99))
    assert found["verdict"] == "decaying"
    assert found["p99_ms"]["change"] == pytest.approx(2.0, abs=0.2)  # ×3: +200 %
    assert found["throughput"] is None  # constant: no line


def test_the_restart_verdict_says_client_when_the_rate_comes_back():
    before = [1000 - 10 * i for i in range(40)]
    after = [1000 + (i % 3) for i in range(20)]
    record = _record(before + after, restart={"after_interval": 40, "gap_seconds": 1.0})
    found = drift.restart_verdict(record)
    assert found["verdict"] == "client"
    assert found["recovered"] > 0.9
    assert "lives in the client" in drift.describe_restart(found)


def test_the_restart_verdict_says_server_when_it_does_not():
    rates = [1000 - 10 * i for i in range(60)]
    record = _record(rates, restart={"after_interval": 40, "gap_seconds": 1.0})
    found = drift.restart_verdict(record)
    assert found["verdict"] == "server"
    assert found["recovered"] < 0.5


def test_no_decay_no_attribution():
    rng = random.Random(2)
    rates = [1000 + rng.gauss(0, 20) for _ in range(60)]
    found = drift.restart_verdict(_record(rates, restart={"after_interval": 30}))
    assert found["verdict"] == "no decay"
    assert "nothing to attribute" in drift.describe_restart(found)


def _report(worker, intervals, started_at, series):
    operation = {
        "count": sum(n for n, _h in intervals),
        "latency": "",
        "service": None,
        "conflicts": {},
        "retries": 0,
        "failures": {},
        "lag_sum_seconds": 0.0,
        "lag_max_seconds": 0.0,
    }
    return {
        "worker": worker,
        "operations": {"read": operation},
        "intervals": intervals,
        "seconds": float(len(intervals)),
        "unstarted": 0,
        "increments": 1,
        "warmup_increments": 0,
        "uncertain_increments": 0,
        "inserted": 2,
        "counters": {"loads": 5},
        "started_at": started_at,
        "series": series,
        "series_notes": [],
        "series_seconds": 0.1,
    }


def test_joining_two_stages_continues_intervals_times_and_counters():
    hits_a = {"unit": "loads", "t": [0.0, 1.0, 2.0], "values": [0, 10, 20]}
    hits_b = {"unit": "loads", "t": [0.0, 1.0], "values": [0, 7]}
    first = [_report(0, [(5, ""), (6, ""), (7, "")], 100.0, {"client_cache_hits": hits_a})]
    second = [_report(0, [(8, "")], 104.5, {"client_cache_hits": hits_b})]
    (joined,), restart = join_stages(first, second)
    assert restart == {"after_interval": 3, "gap_seconds": 1.5}
    assert [n for n, _h in joined["intervals"]] == [5, 6, 7, 8]
    assert joined["operations"]["read"]["count"] == 26
    assert joined["inserted"] == 4
    assert joined["counters"] == {"loads": 10}
    series = joined["series"]["client_cache_hits"]
    assert series["t"] == [0.0, 1.0, 2.0, 4.5, 5.5]
    assert series["values"] == [0, 10, 20, 20, 27]  # the new process's count continues


def _staircase(n: int = 24) -> list[float]:
    """A throughput that falls in two steps, as CPU burners make it fall."""
    return [1000.0 - 300.0 * (i >= n // 3) - 300.0 * (i >= 2 * n // 3) + (i % 3) for i in range(n)]


def _gauge(values, unit="ms/ms"):
    return {"unit": unit, "t": [float(i + 1) for i in range(len(values))], "values": values}


def test_a_decay_the_workers_cpu_wait_rose_with_is_the_machines():
    rates = _staircase()
    wait = [5.0 + 10.0 * (i >= 8) + 10.0 * (i >= 16) + 0.1 * (i % 2) for i in range(24)]
    record = _record(rates, series={"client.0.cpu_wait_ratio": _gauge(wait)})
    found = drift.drift(record)
    assert found["verdict"] == "busier machine"
    assert found["machine"]["series"] == "cpu_wait_ratio"
    assert found["machine"]["r"] < -0.9
    assert found["moved_with"] == []  # the machine's series are weighed apart
    sentence = drift.describe(found, 24.0)
    assert sentence is not None
    assert sentence.startswith("drift: the machine got busier, not the database, over 24 s")
    assert "the workers waited for a CPU 5.05 → 25.05" in sentence


def test_a_database_series_closer_to_the_decay_keeps_it_the_databases():
    rates = _staircase()
    # The CPU wait rises too (a local server working harder), but less closely
    # than the dead rows, which follow the throughput step for step.
    wait = [5.0 + 0.8 * i + (3.0 if i % 4 == 0 else 0.0) for i in range(24)]
    dead = [float(10 * (1000 - rate)) for rate in rates]
    record = _record(
        rates,
        series={
            "client.0.cpu_wait_ratio": _gauge(wait),
            "postgresql.object_state.dead_rows": _gauge(dead, "rows"),
        },
    )
    found = drift.drift(record)
    assert found["verdict"] == "decaying"
    assert found["moved_with"][0]["series"] == "postgresql.object_state.dead_rows"


def test_a_flat_cpu_wait_names_no_machine():
    rates = _staircase()
    record = _record(rates, series={"client.0.cpu_wait_ratio": _gauge([5.0, 5.2] * 12)})
    assert drift.drift(record)["verdict"] == "decaying"


#: Transactions per second before the restart in three runs of the server's decay
#: (tests/integration/test_mix_decays.py: dead rows under a held snapshot, 2026-11-26,
#: load 1 to 5): fast falls that level off.  The line through each fits so badly
#: that its interval reached past zero, and the middle third of two of them sat
#: a little below the last: both rules said "no decay" of a rate that lost 40-85 %.
SERVER_DECAYS = [
    [24, 22, 27, 22, 22, 20, 10, 17, 13, 12, 12, 12, 10, 11, 9, 11, 11, 13, 10, 9,
     8, 6, 7, 7, 9, 6, 5, 8, 10, 12, 10, 14, 15, 8, 8, 8, 8, 10, 11, 9],
    [39, 79, 61, 59, 25, 22, 17, 17, 18, 14, 12, 10, 10, 8, 8, 9, 9, 8, 9, 12,
     10, 11, 11, 7, 8, 6, 6, 4, 5, 6, 5, 6, 8, 8, 9, 7, 5, 5, 4, 4],
    [23, 29, 21, 26, 22, 22, 21, 15, 14, 14, 14, 14, 15, 10, 9, 5, 5, 3, 5, 2,
     0, 4, 3, 5, 3, 3, 9, 8, 5, 7, 5, 6, 6, 8, 8, 8, 6, 6, 7, 7],
]  # fmt: skip


@pytest.mark.parametrize("rates", SERVER_DECAYS)
def test_a_real_fall_that_levels_off_is_a_decay_though_no_line_fits_it(rates):
    line = drift.fit([float(t + 1) for t in range(len(rates))], rates)
    assert line is not None
    # Why the verdict doesn't rest on the line: its interval doesn't lie beyond -10 %.
    assert line.change_high > -drift.MATERIAL_CHANGE
    found = drift.drift(_record(rates))
    assert found["verdict"] == "decaying", found["steps"]
    low, high = found["steps"]["throughput"]["change_ci95"]
    assert low < found["steps"]["throughput"]["change"] < high <= -drift.MATERIAL_CHANGE


@pytest.mark.parametrize("seed", range(40))
def test_a_run_that_wanders_about_one_level_is_steady(seed):
    """AR(1) noise with ρ = 0.9 (a machine whose load comes and goes): no alarm."""
    rng = random.Random(seed)
    level, rates = 0.0, []
    for _ in range(60):
        level = 0.9 * level + rng.gauss(0, 30)
        rates.append(1000 + level)
    assert drift.drift(_record(rates))["verdict"] == "steady"


def test_a_run_with_a_restart_is_judged_before_it():
    """A client's decay that new processes cured: the recovery after the restart
    must not hide the fall before it (the whole run's thirds go down, then up)."""
    before = [1000 - 15 * i for i in range(40)]
    after = [1000 + (i % 3) for i in range(20)]
    record = _record(before + after, restart={"after_interval": 40, "gap_seconds": 1.0})
    found = drift.drift(record)
    assert found["verdict"] == "decaying"
    assert found["before_restart"] is True
    assert found["judged_seconds"] == 40
    assert drift.describe(found, 60).startswith("drift: decaying over 40 s before the restart:")
    whole = drift.drift(_record(before + after))  # the same intervals, no restart said
    assert whole["verdict"] == "steady"


def test_a_restart_tells_the_clients_series_from_the_servers():
    """A server's decay with a restart: the client's memory grew with it before the
    restart as closely as the dead rows did (the CI pre-check of 2026-11-26 ranked it
    first), but new processes brought it back down while the rate stayed down."""
    rates = [40 - 0.8 * i for i in range(40)] + [8.0 + (i % 2) for i in range(20)]
    t = list(range(61))
    rss = [5e7 + 3e5 * i for i in range(41)] + [5e7 + 3e5 * i for i in range(20)]
    dead = [1000 * i for i in range(61)]
    series = {
        "client.0.rss": {"unit": "bytes", "t": t, "values": rss},
        "postgresql.object_state.dead_rows": {"unit": "rows", "t": t, "values": dead},
    }
    restart = {"after_interval": 40, "gap_seconds": 0.0}
    found = drift.drift(_record(rates, series=series, restart=restart))
    assert found["verdict"] == "decaying"
    names = [entry["series"] for entry in found["moved_with"]]
    assert names == ["postgresql.object_state.dead_rows"]

"""A <rawkv> floor's cells go through the runner's rounds: warm-up, --precision, --max-time.

A SQLite floor (the standard library's, always there) with one phase and a
few records: each repetition is two worker processes' start and a few
milliseconds of work.  A goal of ±0.0000001 % is never met, so only
--max-time ends the rounds.
"""

from __future__ import annotations

from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions
from zodbshootout.run.runner import Runner

from support import configs

UNREACHABLE = 1e-9  # a relative half-width no real timing gets to


def _run(write_config, tmp_path, **options):
    config = load_config(write_config(configs.rawkv("floor", "sqlite")), str(tmp_path))
    run_options = RunOptions(object_counts=(10,), concurrencies=(1,), phases=("add",), **options)
    result = Runner(config, run_options).run()
    assert result.failures == []
    return result


def _repetitions(result, warmup=False):
    return sorted({m.repetition for m in result.measurements if m.warmup == warmup})


def test_a_precision_goal_adds_rounds_until_max_time_is_spent(write_config, tmp_path):
    short = _run(
        write_config, tmp_path, repetitions=2, precision=UNREACHABLE, max_time_seconds=1e-6
    )
    # No time for more than the minimum: --max-time stopped the rounds.
    assert _repetitions(short) == [1, 2]
    assert _repetitions(short, warmup=True) == [0]  # an untimed warm-up, as for ZODB
    longer = _run(
        write_config, tmp_path, repetitions=2, precision=UNREACHABLE, max_time_seconds=1.5
    )
    # The goal asked for more, and the time allowed some.
    assert len(_repetitions(longer)) > 2
    assert longer.metadata["stopping_rule"]["max_time_seconds"] == 1.5


def test_without_a_precision_goal_a_floor_gets_exactly_r(write_config, tmp_path):
    result = _run(write_config, tmp_path, repetitions=3, precision=None, warmup=False)
    assert _repetitions(result) == [1, 2, 3]
    assert _repetitions(result, warmup=True) == []
    phases = {m.timing.phase for m in result.measurements}
    assert phases == {"add"}


def test_a_floors_hot_sample_loops_as_zodbs_do(write_config, tmp_path):
    config = load_config(write_config(configs.rawkv("floor", "sqlite")), str(tmp_path))
    options = RunOptions(
        object_counts=(10,), concurrencies=(1,), phases=("cold", "hot"), repetitions=2,
        precision=None,
    )  # fmt: skip
    result = Runner(config, options).run()
    assert result.failures == []
    # Ten keys read in microseconds: the warm-up calibrated many loops per sample,
    # enough for about 50 ms, as for ZODB's hot.
    timed = [m.timing for m in result.measurements if m.timing.phase == "hot" and not m.warmup]
    assert timed
    assert all(t.loops > 1 for t in timed), [t.loops for t in timed]
    assert all(t.seconds / t.loops < 0.05 for t in timed)
    cold = [m.timing for m in result.measurements if m.timing.phase == "cold"]
    assert cold
    assert all(t.loops == 1 for t in cold)  # a fresh handle each time: not looped

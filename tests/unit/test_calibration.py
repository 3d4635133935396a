"""Loop counts: enough work per sample, never absurdly many loops."""

from zodbshootout.run.calibration import MAX_LOOPS, loops_for, loops_for_workers


def test_a_sample_of_one_millisecond_loops_until_fifty():
    # 64 loops of 1 ms: the smallest power of two reaching 50 ms.
    assert loops_for(0.001) == 64
    assert 64 * 0.001 >= 0.05 > 32 * 0.001


def test_a_phase_already_long_enough_runs_once():
    assert loops_for(0.05) == 1
    assert loops_for(2.0) == 1


def test_the_target_is_reached_exactly_at_a_power_of_two():
    assert loops_for(0.05 / 8) == 8


def test_a_duration_the_clock_could_not_resolve_asks_for_the_maximum():
    assert loops_for(0.0) == MAX_LOOPS


def test_the_loop_count_is_capped():
    assert loops_for(1e-9) == MAX_LOOPS
    assert loops_for(1e-9, max_loops=100) == 100


def test_workers_share_the_loops_of_the_fastest():
    # The fastest worker must reach the target too.
    assert loops_for_workers([0.004, 0.001]) == 64
    assert loops_for_workers([]) == 1


def test_the_warmup_calibrates_only_looped_phases():
    from zodbshootout.results.record import PhaseTiming
    from zodbshootout.run.calibration import loops_from_warmup

    def timing(phase, worker, seconds, loops=1):
        return PhaseTiming(phase, worker, seconds, 1000, 0, 0, 0, loops=loops)

    warmup = [
        timing("add", 0, 0.001),
        timing("steamin", 0, 0.0010),
        timing("steamin", 1, 0.0008),
        timing("open", 0, 0.004, loops=8),  # 0.5 ms a loop
    ]
    assert dict(loops_from_warmup(warmup, ["steamin", "open", "hot"])) == {
        "steamin": 64,  # the faster worker: 0.8 ms
        "open": 128,
    }

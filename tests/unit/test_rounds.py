"""Round-robin repetitions: warm-up first, then one repetition of each database per round."""

from zodbshootout.options.run import StoppingRule
from zodbshootout.results.record import PhaseTiming
from zodbshootout.run.rounds import measure_in_rounds


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def run(databases, rule, rates=None, fail=(), warmup=True):
    clock = Clock()
    calls = []

    def repeat(name, repetition, loops):
        calls.append((name, repetition, loops))
        clock.now += 1.0  # every repetition takes a second
        if (name, repetition) in fail:
            return None
        return [PhaseTiming("steamin", 0, 0.001, 1000, 0, 0, None)]

    measured, done = measure_in_rounds(
        databases,
        repeat,
        rule,
        rates or (lambda names: {}),
        ["steamin"],
        warmup=warmup,
        clock=clock,
    )
    return calls, measured, done


def test_databases_take_turns_after_a_warmup_that_calibrates_the_loops():
    calls, measured, done = run(["a", "b"], StoppingRule(2, None))
    assert calls == [
        ("a", 0, ()),
        ("b", 0, ()),
        ("a", 1, (("steamin", 64),)),  # 1 ms a loop: 64 loops for 50 ms
        ("b", 1, (("steamin", 64),)),
        ("a", 2, (("steamin", 64),)),
        ("b", 2, (("steamin", 64),)),
    ]
    assert (measured, done) == (["a", "b"], 2)


def test_a_failed_database_leaves_the_rounds():
    calls, measured, _done = run(["a", "b"], StoppingRule(3, None), fail={("a", 1)})
    assert [c[:2] for c in calls if c[0] == "a"] == [("a", 0), ("a", 1)]
    assert [c[1] for c in calls if c[0] == "b"] == [0, 1, 2, 3]
    assert measured == ["b"]


def test_imprecise_cells_get_rounds_until_the_time_is_up():
    noisy = {"cell": [1.0, 2.0, 3.0]}
    rule = StoppingRule(3, 0.05, max_seconds=9.0)
    calls, _measured, done = run(["a", "b"], rule, rates=lambda names: noisy)
    # warm-up 2 s + 3 rounds of 2 s = 8 s; a fourth round would end at 10 s.
    assert done == 3
    assert len(calls) == 8


def test_without_warmup_no_loops_are_calibrated():
    calls, _measured, _done = run(["a"], StoppingRule(1, None), warmup=False)
    assert calls == [("a", 1, ())]

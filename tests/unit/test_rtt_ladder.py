"""``--rtt``: the ladder of added round-trip times, and every way to write it wrong."""

from __future__ import annotations

import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zodbshootout.errors import UsageError
from zodbshootout.network.delays import MAX_STEPS, RttStep, parse_rtt_ladder
from zodbshootout.network.proxy import Delay


def ms(*values: float) -> tuple[RttStep, ...]:
    return tuple(RttStep(value / 1e3) for value in values)


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("0,0.5,2,10ms", ms(0, 0.5, 2, 10)),
        ("0,2", ms(0, 2)),  # no unit at all: milliseconds
        ("500us,2ms", ms(0.5, 2)),
        ("500µs, 2 ms", ms(0.5, 2)),
        ("0.5,2s", ms(500, 2000)),  # the unit written after a number is its unit
        ("1s,500,2ms", ms(1000, 500, 2)),
        ("2ms±0.5", (RttStep(2e-3, 0.5e-3),)),  # the jitter takes its step's unit
        ("2±0.5ms", (RttStep(2e-3, 0.5e-3),)),
        ("2ms+-0.5", (RttStep(2e-3, 0.5e-3),)),  # ± is hard to type
        ("1s±200ms", (RttStep(1.0, 0.2),)),
        ("0,2ms±1,10", (RttStep(0), RttStep(2e-3, 1e-3), RttStep(10e-3))),
        ("10s", (RttStep(10.0),)),  # the largest allowed
        ("1e1ms", ms(10)),
    ],
)
def test_ladders_read_as_written(text, steps):
    parsed = parse_rtt_ladder(text)
    assert len(parsed) == len(steps)
    for got, want in zip(parsed, steps, strict=True):
        assert got.rtt_seconds == pytest.approx(want.rtt_seconds)
        assert got.jitter_seconds == pytest.approx(want.jitter_seconds)


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("-1ms", "can't be negative"),
        ("2ms±-0.5", "can't be negative"),
        ("11s", "at most 10 s"),
        ("0,20000", "at most 10 s"),  # 20000 ms
        ("nan", "finite number"),
        ("infms", "finite number"),
        ("1e999ms", "finite number"),
        ("2ms±3", "jitter can't exceed"),
        ("2 ms ms", "not a round-trip time"),
        ("fast", "not a round-trip time"),
        ("2ns", "unknown unit 'ns'"),
        ("2h", "unknown unit 'h'"),
        ("0,,2", "an empty step"),
        ("", "an empty step"),
        ("2ms,2", "2 ms is asked twice"),
        ("1,2;3", "not a round-trip time"),
        (",".join(str(n) for n in range(MAX_STEPS + 1)), f"at most {MAX_STEPS} steps"),
    ],
)
def test_bad_ladders_are_refused_in_one_line(text, complaint):
    with pytest.raises(UsageError) as refused:
        parse_rtt_ladder(text)
    message = str(refused.value)
    assert complaint in message
    assert message.startswith("--rtt: ")
    assert "\n" not in message


def test_a_step_says_its_one_way_delay_and_label():
    step = parse_rtt_ladder("2ms±0.5")[0]
    assert step.one_way_seconds == pytest.approx(1e-3)
    assert step.label == "2 ms ± 0.5"
    assert parse_rtt_ladder("0")[0].label == "0 ms"


@given(st.text(max_size=30))
def test_any_text_is_a_ladder_or_one_clean_line(text):
    try:
        steps = parse_rtt_ladder(text)
    except UsageError as e:
        message = str(e)
        steps = ()
    else:
        message = ""
    assert "\n" not in message
    for step in steps:
        assert 0 <= step.jitter_seconds <= step.rtt_seconds <= 10


def test_the_proxy_draws_each_direction_uniformly_within_half_the_jitter():
    """2 ms ± 1 on the round trip: each chunk waits 1 ms ± 0.5 ms each way, uniformly."""
    delay = Delay(rtt_seconds=2e-3, jitter_seconds=1e-3)
    draws = [delay.one_way(random.Random(seed)) for seed in range(4000)]
    assert 0.5e-3 <= min(draws) < 0.52e-3
    assert 1.48e-3 < max(draws) <= 1.5e-3
    assert statistics.mean(draws) == pytest.approx(1e-3, abs=0.02e-3)
    quartiles = statistics.quantiles(draws, n=4)  # uniform: evenly spaced
    assert quartiles == pytest.approx([0.75e-3, 1e-3, 1.25e-3], abs=0.03e-3)
    assert Delay(rtt_seconds=2e-3).one_way(random.Random(1)) == 1e-3

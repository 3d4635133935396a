"""The --rtt fit: time per transaction against the measured RTT, from made-up timings.

The timings are built from a known line (local cost + round trips × RTT),
so the fit must give that line back exactly; the notes say it in words.
"""

from __future__ import annotations

import dataclasses

import pytest

from zodbshootout.render.notes import derived_notes
from zodbshootout.render.rtt import format_fit, mix_fit_notes
from zodbshootout.results.histogram import encode, new_histogram
from zodbshootout.results.record import Measurement, PhaseTiming, RunResult
from zodbshootout.results.rtt import classic_fits, mix_fits, row_name, stored_fits

#: The RTT each step measured (seconds): not the asked one, a little more.
MEASURED = {0.0: 0.0002, 0.002: 0.0021, 0.005: 0.0052}
LOCAL_SECONDS = 0.012
ROUND_TRIPS = {"cold": 51, "steamin": 0}


def _rtt_metadata() -> dict:
    rows = {
        row_name("zeo", asked): {
            "database": "zeo",
            "asked_seconds": asked,
            "jitter_seconds": 0.0,
            "server": "zeo",
            "base_seconds": {"zeo": 0.0001},
            "proxied_seconds": {"zeo": seen},
        }
        for asked, seen in MEASURED.items()
    }
    return {"rtt": {"ladder": [], "rows": rows, "unproxied": ["fs"]}}


def _timing(phase: str, seconds: float, loops: int = 1, work: dict | None = None) -> PhaseTiming:
    return PhaseTiming(phase, 0, seconds * loops, 50, 50, None, None, loops=loops, work=work)


def classic_result() -> RunResult:
    rows = [row_name("zeo", asked) for asked in MEASURED]
    result = RunResult([*rows, "fs"], [50], [1], ["cold", "steamin"], 2, metadata=_rtt_metadata())
    for row, seen in zip(rows, MEASURED.values(), strict=True):
        for phase, trips in ROUND_TRIPS.items():
            seconds = LOCAL_SECONDS + trips * seen
            loops = 1 if phase == "cold" else 1000
            work = {"round_trips": trips * loops}
            result.measurements.append(
                Measurement(row, 1, 50, 0, _timing(phase, seconds * 3, loops, work), warmup=True)
            )
            for repetition in (1, 2):
                timing = _timing(phase, seconds, loops)
                result.measurements.append(Measurement(row, 1, 50, repetition, timing))
    return result


def test_the_fit_gives_the_line_the_timings_were_made_of():
    fits = {fit.what: fit for fit in classic_fits(classic_result())}
    assert fits["cold"].slope == pytest.approx(51)
    assert fits["cold"].intercept_seconds == pytest.approx(LOCAL_SECONDS)
    assert fits["cold"].counted == pytest.approx(51)
    assert fits["cold"].rows == ("zeo@0ms", "zeo@2ms", "zeo@5ms")
    assert fits["steamin"].slope == pytest.approx(0, abs=1e-9)
    # fs has no rows in the ladder: no fit of its own.
    assert {fit.database for fit in fits.values()} == {"zeo"}


def test_the_fit_takes_each_step_s_fastest_repetition():
    """A repetition that load slowed (late wake-ups at each round trip) bends no line."""
    result = classic_result()
    result.measurements = [
        dataclasses.replace(m, timing=dataclasses.replace(m.timing, seconds=m.timing.seconds * 1.5))
        if m.repetition == 2 and m.database == "zeo@5ms"
        else m
        for m in result.measurements
    ]
    fits = {fit.what: fit for fit in classic_fits(result)}
    assert fits["cold"].slope == pytest.approx(51)
    assert fits["cold"].intercept_seconds == pytest.approx(LOCAL_SECONDS)


def test_a_fit_survives_the_result_file():
    fit = classic_fits(classic_result())[0]
    (again,) = stored_fits({"rtt": {"fits": [fit.as_data()]}})
    assert again == fit


def test_the_notes_say_the_rtts_seen_and_the_fit():
    notes = derived_notes(classic_result())
    assert (
        "zeo: round trip 0.10 ms direct; through the proxy 0.20, 2.10, 5.20 ms "
        "(asked +0, +2, +5 ms)"
    ) in notes
    assert "fs: no network server, measured once: the same at every --rtt step" in notes
    cold = next(note for note in notes if note.startswith("zeo cold"))
    assert cold.startswith(
        "zeo cold (n=50, c=1): +51.00 ms per transaction per added ms of RTT "
        "≈ 51.0 round trips per transaction (local cost 12 ms; 3 steps)"
    )
    assert cold.endswith("--work counted 51.0 round trips per transaction")


def test_a_run_without_a_ladder_has_no_fit():
    result = classic_result()
    result.metadata = {}
    assert classic_fits(result) == []
    assert not [note for note in derived_notes(result) if "per added ms" in note]


def _record(row: str, microseconds: float) -> dict:
    histogram = new_histogram()
    for _ in range(10):
        histogram.record_value(microseconds)
    encoded = encode(histogram)
    return {
        "database": row,
        "concurrency": 2,
        "operations": {"read": {"latency": encoded, "service": encoded}},
    }


def test_a_mix_fit_by_operation_under_its_last_step():
    result = RunResult([], [1000], [2], [], 1, metadata=_rtt_metadata())
    for asked, seen in MEASURED.items():
        result.mix.append(_record(row_name("zeo", asked), 1000 + 3 * seen * 1e6))
    (fit,) = mix_fits(result)
    assert fit.what == "read"
    assert fit.slope == pytest.approx(3, rel=0.01)  # the histogram's precision
    result.metadata["rtt"]["fits"] = [fit.as_data()]
    assert mix_fit_notes(result.metadata, "zeo@2ms") == []
    notes = mix_fit_notes(result.metadata, "zeo@5ms")
    assert notes[0] == "zeo against the RTT, zeo@0ms, zeo@2ms, zeo@5ms:"
    assert notes[1] == format_fit(fit, where=False)
    assert notes[1].startswith("read: +3.0")


def test_a_slope_at_or_below_zero_counts_no_round_trips():
    fit = classic_fits(classic_result())[0]
    flat = dataclasses.replace(fit, slope=-4.18)
    text = format_fit(flat)
    assert "-4.18 ms per transaction per added ms of RTT" in text
    assert "no growth with the RTT that this run could measure" in text
    assert "round trips per transaction (" not in text

"""Notes on loads a phase was not meant to make, and on a shared cache nobody read."""

from __future__ import annotations

from zodbshootout.render.notes import shared_cache_notes, update_reload_notes
from zodbshootout.results.record import Measurement, PhaseTiming, RunResult


def _result(*measurements):
    return RunResult(
        databases=sorted({m.database for m in measurements}),
        object_counts=[1000],
        concurrencies=[1],
        phases=["add", "update", "warm"],
        repetitions=2,
        measurements=list(measurements),
    )


def _update(database, repetition, loads, hits=None, warmup=False):
    timing = PhaseTiming("update", 0, 0.1, 1000, loads, None, hits)
    return Measurement(database, 1, 1000, repetition, timing, warmup=warmup)


def test_update_that_reloaded_the_objects_add_wrote_is_noted():
    result = _result(
        _update("sqlite", 1, 1003, hits=1000),
        _update("sqlite", 2, 400, hits=400),
        _update("fs", 1, 3),  # root, mapping, container: expected
        _update("zeo", 0, 1003, warmup=True),  # a warm-up is not a measurement
    )
    notes = update_reload_notes(result)
    assert len(notes) == 1
    assert notes[0].startswith("sqlite: update (n=1000) loaded up to 1,003 objects per worker")
    assert "1,000 of them from the client cache" in notes[0]


def test_no_update_note_when_add_left_its_objects_in_the_pickle_cache():
    assert update_reload_notes(_result(_update("sqlite", 1, 0), _update("sqlite", 2, 3))) == []


def _shared(database, phase, hits, misses, sets):
    timing = PhaseTiming(
        phase,
        0,
        0.1,
        1000,
        1000,
        None,
        None,
        shared_cache_hits=hits,
        shared_cache_misses=misses,
        shared_cache_sets=sets,
    )
    return Measurement(database, 1, 1000, 1, timing)


def test_a_shared_cache_that_took_writes_and_served_no_reads_is_noted():
    result = _result(
        _shared("mysql_mc", "add", 0, 0, 1000),
        _shared("mysql_mc", "update", 0, 0, 1000),
        _shared("mysql_mc", "warm", 0, 0, 0),
        _shared("pg_mc", "add", 0, 0, 1000),
        _shared("pg_mc", "warm", 10, 990, 990),  # it was read: no note
    )
    notes = shared_cache_notes(result)
    assert len(notes) == 1
    assert notes[0].startswith("mysql_mc: its shared cache (memcached) took 2,000 writes")
    assert "served no reads" in notes[0]


def test_no_shared_cache_note_without_a_shared_cache():
    plain = PhaseTiming("add", 0, 0.1, 1000, 0, 0, None)
    assert shared_cache_notes(_result(Measurement("fs", 1, 1000, 1, plain))) == []

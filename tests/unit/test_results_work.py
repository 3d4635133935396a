"""Work per transaction: a cell's counts, the compare gate, the N+1 note, the table rows."""

from __future__ import annotations

import dataclasses

import pytest

from zodbshootout.concurrency.modes import refuse_options
from zodbshootout.errors import UsageError
from zodbshootout.options.run import THREADS, RunOptions
from zodbshootout.probes.work import COUNTED, WorkMeter
from zodbshootout.render.csv import Csv
from zodbshootout.render.notes import derived_notes
from zodbshootout.results.record import CellKey, Measurement, PhaseTiming, RunResult
from zodbshootout.results.work import WORK_COUNTS, cell_work, counted_cells, more_work, n_plus_one

N = 100


def _work(**counts):
    return {name: counts.get(name, 0) for name in WORK_COUNTS}


def _timing(phase, worker, work, loops=1, objects=N):
    return PhaseTiming(phase, worker, 0.1, objects, 0, None, None, loops=loops, work=work)


def _result(cold_trips=N + 3, prefetch_trips=4, server_loads=N + 3):
    """Two workers, one counted warm-up and one timed repetition (which counts nothing)."""
    measurements = []
    for worker in (0, 1):
        cold = _work(loads=N + 3, server_loads=server_loads, round_trips=cold_trips)
        prefetch = _work(loads=N + 3, prefetch_calls=1, prefetched_objects=N)
        prefetch["round_trips"] = prefetch_trips
        for phase, work in (("cold", cold), ("prefetch", prefetch)):
            measurements.append(Measurement("zeo", 2, N, 0, _timing(phase, worker, work), True))
            measurements.append(Measurement("zeo", 2, N, 1, _timing(phase, worker, None)))
    return RunResult(["zeo"], [N], [2], ["cold", "prefetch"], 1, measurements)


def test_the_probe_and_the_results_name_the_same_counts():
    assert tuple(WORK_COUNTS) == COUNTED


def test_a_cell_adds_up_its_workers_and_divides_by_transactions_and_objects():
    timings = [
        _timing("hot", 0, _work(loads=3 * N, round_trips=None), loops=3),
        _timing("hot", 1, _work(loads=N, round_trips=5), loops=1),
    ]
    work = cell_work(timings)
    assert work is not None
    assert (work.transactions, work.objects) == (4, 4 * N)
    assert work.totals["loads"] == 4 * N
    assert work.per_transaction("loads") == N
    assert work.per_object("loads") == 1
    # One worker could not count round trips: the cell has none, not half of them.
    assert work.totals["round_trips"] is None
    assert work.per_transaction("round_trips") is None
    assert cell_work([_timing("hot", 0, None)]) is None


def test_only_the_counting_pass_has_work():
    cells = counted_cells(_result())
    assert set(cells) == {CellKey("zeo", 2, N, "cold"), CellKey("zeo", 2, N, "prefetch")}
    assert cells[CellKey("zeo", 2, N, "prefetch")].per_transaction("round_trips") == 4


def test_the_gate_names_a_cell_whose_work_grew_and_nothing_else():
    base = _result()
    assert more_work(base, _result(), "round_trips") == []
    grown = more_work(base, _result(prefetch_trips=5), "round_trips")
    assert [(g.key.phase, g.base, g.changed) for g in grown] == [("prefetch", 4, 5)]
    # Less work is no failure.
    assert more_work(base, _result(prefetch_trips=3), "round_trips") == []


def test_n_plus_one_is_named_where_prefetch_batched_the_reads():
    found = n_plus_one(_result())
    assert [(f.key.phase, f.round_trips, f.prefetched_round_trips) for f in found] == [
        ("cold", N + 3, 4)
    ]
    notes = [n for n in derived_notes(_result()) if n.startswith("N+1")]
    assert notes == [
        "N+1 pattern: zeo: Read 100 Cold Objects took 103 round trips per transaction, one "
        "per object, where prefetching them took 4: a read like this gains from "
        "Connection.prefetch"
    ]
    # Prefetch that saves nothing (a storage without a server): no pattern.
    assert n_plus_one(_result(cold_trips=0, prefetch_trips=0)) == []
    # Reads the client cache answered: no pattern either.
    assert n_plus_one(_result(server_loads=0)) == []


def test_the_table_shows_the_work_under_the_rates():
    rows = {
        line.split('",')[0].strip('"'): line.split()[-1]
        for line in Csv().run(_result())
        if line.startswith('"') and "/transaction" in line
    }
    assert rows == {
        "Read 100 Cold Objects: loads/transaction": "103",
        "Read 100 Cold Objects: server loads/transaction": "103",
        "Read 100 Cold Objects: round trips/transaction": "103",
        "Read 100 Prefetched Cold Objects: loads/transaction": "103",
        "Read 100 Prefetched Cold Objects: prefetch calls/transaction": "1",
        "Read 100 Prefetched Cold Objects: prefetched objects/transaction": "100",
        "Read 100 Prefetched Cold Objects: round trips/transaction": "4",
    }
    # A run without --work has no such rows.
    plain = dataclasses.replace(
        _result(),
        measurements=[m for m in _result().measurements if not m.warmup],
    )
    assert not [line for line in Csv().run(plain) if "transaction" in line]


def test_the_meter_counts_only_between_the_clock_readings():
    readings = iter(range(0, 100, 10))
    clock_calls = []
    meter = WorkMeter(db=None, transfers=lambda: None)
    fake_clock = meter.clock(lambda: clock_calls.append(1) or 0.0)

    def read():  # each reading: 10 more of every count
        return dict.fromkeys(COUNTED, next(readings))

    fake_clock._read = read
    fake_clock()  # start: 0
    fake_clock()  # stop: 10
    read()  # work between two samples (a looped phase's untimed part): 20
    fake_clock()  # start: 30
    fake_clock()  # stop: 40
    assert meter.after(None)["work"] == dict.fromkeys(COUNTED, 20)
    assert len(clock_calls) == 4


def test_work_needs_worker_processes_and_a_warm_up():
    with pytest.raises(UsageError, match="--work counts in worker processes"):
        refuse_options(RunOptions(work=True, mode=THREADS))
    with pytest.raises(ValueError, match="--work counts in the warm-up"):
        RunOptions(work=True, warmup=False)

"""What recording one transaction costs a mix worker, and whether its memory stays bounded.

Not a test: a measurement to run by hand and paste into a report.  It times
:meth:`zodbshootout.mix.recorder.Recorder.record` (what a worker adds to each
committed transaction: its latency in microseconds appended to a list, plus
the service time in an open loop, and the interval bookkeeping) together with
what that defers: the fold of those lists into the HdrHistograms
(:func:`~zodbshootout.mix.recorder.record_values`) and the encoding of each
interval's histogram.  It runs a loop of simulated transactions (one per
millisecond of simulated time, so each one-second interval's closing is
shared by 1000 transactions as in a fast worker) against the same loop
without recording, and reports the difference per transaction (median of
several rounds), in microseconds and in units of one bare ``record_value``
(the library's cost per value, which each transaction paid once or twice
before; a busy machine inflates it as much as the rest).  The latencies take
500 values 10 µs apart, so that they repeat within an interval as a fast
worker's do; the last two lines give the worst case, where no latency of an
interval repeats, so the fold can't share any work.  The issue's target is at
most 2 µs per transaction on a quiet machine.

Then it records as many transactions as a 30-second run of 100,000
transactions a second would (3 million, in 30 one-second intervals, so the
recorder also folds early, every ``FOLD_EVERY`` transactions) and reports
the memory the recorder holds after 1, 10 and 30 intervals, and its peak
(tracemalloc): histograms and a bounded list, not lists of samples, so it
doesn't grow.

Usage::

    python benchmarks/mix_record.py [--transactions 200000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import tracemalloc

from zodbshootout.mix.recorder import FOLD_EVERY, Recorder, new_histogram

#: The simulated worker starts a transaction every millisecond (1000 per
#: second, a fast worker), so each one-second interval's closing (its
#: histograms merged and encoded) is shared by 1000 transactions.
_GAP_SECONDS = 0.001


def _loop(transactions: int, recorder: Recorder | None, distinct: int) -> float:
    """Seconds for *transactions* simulated transactions (recorded if *recorder*).

    Latencies take *distinct* values 10 µs apart, from 10 µs on, spread
    evenly over each interval's transactions.
    """
    operations = ("read", "update")
    clock = time.perf_counter
    begin = clock()
    for i in range(transactions):
        operation = operations[i & 1]
        started = i * _GAP_SECONDS
        done = started + 0.000_01 * (1 + (i * 7919) % distinct)
        if recorder is not None:
            recorder.record(operation, started, started, done)
    if recorder is not None:
        recorder.as_data()  # the last interval's fold and the totals' encoding
    return clock() - begin


def cost_per_transaction(
    transactions: int, rounds: int, open_loop: bool, distinct: int = 500
) -> list[float]:
    """Microseconds recording adds per transaction, one value per round."""
    costs = []
    for _round in range(rounds):
        bare = _loop(transactions, None, distinct)
        recorder = Recorder(("read", "update"), start=0.0, open_loop=open_loop)
        recorded = _loop(transactions, recorder, distinct)
        costs.append((recorded - bare) / transactions * 1e6)
    return costs


def record_value_floor(transactions: int) -> float:
    """Microseconds of one bare ``HdrHistogram.record_value`` (the library's own cost)."""
    histogram = new_histogram()
    begin = time.perf_counter()
    for i in range(transactions):
        histogram.record_value(10 * (1 + (i * 7919) % 500))
    return (time.perf_counter() - begin) / transactions * 1e6


def memory_after_intervals(
    per_interval: int, checkpoints: tuple[int, ...]
) -> tuple[list[int], int]:
    """Bytes allocated by the recorder after each checkpoint's number of intervals, and the peak.

    The peak includes the pending latencies of an interval (at most
    ``FOLD_EVERY``) and a fold's passing tally.
    """
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    recorder = Recorder(("read", "update"), start=0.0, interval_seconds=1.0)
    sizes = []
    gap = 1.0 / per_interval
    done = 0
    for interval in range(1, max(checkpoints) + 1):
        for i in range(per_interval):
            start = (done + i) * gap
            latency = 0.000_01 * (1 + (i * 7919) % 500)
            recorder.record(("read", "update")[i & 1], start, start, start + latency)
        done += per_interval
        if interval in checkpoints:
            recorder.close_intervals(done * gap)
            sizes.append(tracemalloc.get_traced_memory()[0] - base)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return sizes, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transactions", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--per-interval", type=int, default=100_000)
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    # The library's own cost first: on a shared machine, the figures below
    # in units of it vary less than in microseconds.
    floors = [record_value_floor(args.transactions) for _round in range(args.rounds)]
    floor = statistics.median(floors)
    print(
        f"for scale: one bare HdrHistogram.record_value costs {floor:.2f} µs here "
        "(a loaded machine multiplies every figure alike)"
    )
    runs = (
        ("closed loop", False, 500),
        ("open loop (--rate)", True, 500),
        ("closed loop, no latency of an interval repeats", False, 5000),
        ("open loop, no latency of an interval repeats", True, 5000),
    )
    for kind, open_loop, distinct in runs:
        costs = cost_per_transaction(args.transactions, args.rounds, open_loop, distinct)
        cost = statistics.median(costs)
        print(
            f"{kind}: recording costs {cost:.2f} µs per transaction, "
            f"{cost / floor:.2f} record_value (median of {args.rounds} rounds; "
            f"range {min(costs):.2f}-{max(costs):.2f})"
        )
    checkpoints = (1, 10, 30)
    sizes, peak = memory_after_intervals(args.per_interval, checkpoints)
    shown = ", ".join(
        f"{n} s: {size / 1024:.0f} KiB" for n, size in zip(checkpoints, sizes, strict=True)
    )
    print(
        f"recorder memory at {args.per_interval} transactions/s: {shown}; "
        f"peak {peak / 1024:.0f} KiB (pending latencies fold every {FOLD_EVERY} transactions)"
    )
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()

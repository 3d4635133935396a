"""A variant's rounds added up into one run, as if one run had made every repetition.

Classic runs: each round's repetitions follow the previous round's
(renumbered; each round's untimed warm-up stays a warm-up), so a cell's
statistics and compare's Welch test see every repetition of every round.
Mix runs: per database, the operations' counts and latency histograms are
added, the intervals of every round follow one another (compare tests the
intervals), and the seconds add up (so throughput is every round's
transactions over every round's time).  Failures, notes and refusals of
any round are kept; the load averages keep each database's highest.
"""

from __future__ import annotations

import copy
from typing import Any

from zodbshootout.results.histogram import encode, merge
from zodbshootout.results.mix import MixRecord, sum_counters, sum_counts
from zodbshootout.results.mix_stats import integrity
from zodbshootout.results.record import Measurement, RunResult


def combine_rounds(rounds: list[RunResult]) -> RunResult:
    """The one run *rounds* (of one variant, same command, in order) add up to."""
    if not rounds:
        raise ValueError("no round to combine")
    first = rounds[0]
    combined = copy.deepcopy(first)
    combined.measurements, combined.failures, combined.notes = [], [], []
    offset = 0
    for result in rounds:
        combined.measurements += [_shifted(m, offset) for m in result.measurements]
        offset += max((m.repetition for m in result.measurements), default=0)
        for failure in result.failures:
            if failure not in combined.failures:
                combined.failures.append(failure)
        combined.notes += [note for note in result.notes if note not in combined.notes]
        combined.refused += [n for n in result.refused if n not in combined.refused]
        combined.setup_failed += [n for n in result.setup_failed if n not in combined.setup_failed]
        combined.interrupted = combined.interrupted or result.interrupted
        combined.signal = result.signal or combined.signal
    combined.repetitions = max(offset, first.repetitions)
    combined.metadata = _metadata(rounds)
    if any(result.mix for result in rounds):
        combined.mix = _combine_mix(rounds, combined.notes)
    return combined


def _shifted(measurement: Measurement, offset: int) -> Measurement:
    if measurement.warmup or not offset:
        return measurement
    return Measurement(
        measurement.database,
        measurement.concurrency,
        measurement.object_count,
        measurement.repetition + offset,
        measurement.timing,
        measurement.warmup,
    )


def _metadata(rounds: list[RunResult]) -> dict[str, Any]:
    """The first round's metadata, spanning every round, with each database's highest loads."""
    metadata = copy.deepcopy(rounds[0].metadata)
    finished = [
        r.metadata["finished"]
        for r in rounds
        if isinstance(r.metadata.get("finished"), (int, float))
    ]
    if finished:
        metadata["finished"] = max(finished)
    loads: dict[str, dict[str, Any]] = {}
    for result in rounds:
        for database, sample in (result.metadata.get("load_average") or {}).items():
            mine = loads.setdefault(database, {})
            for moment, value in sample.items():
                if isinstance(value, (int, float)):
                    known = mine.get(moment)
                    mine[moment] = (
                        value if not isinstance(known, (int, float)) else max(known, value)
                    )
    if loads:
        metadata["load_average"] = loads
    metadata["rounds"] = len(rounds)
    return metadata


# --- Mix runs ----------------------------------------------------------------


def _combine_mix(rounds: list[RunResult], notes: list[str]) -> list[dict[str, Any]]:
    """Each database's records of every round as one record (see the module's docstring)."""
    by_database: dict[str, list[dict[str, Any]]] = {}
    for number, result in enumerate(rounds, start=1):
        for record in result.mix:
            by_database.setdefault(record["database"], []).append(record)
            found = integrity(MixRecord.from_data(record))
            if found is not None and (found.stray or found.lost):
                notes.append(
                    f"{record['database']}, round {number}: the dataset check found "
                    f"{found.stray} stray and {found.lost} lost changes"
                )
    return [_combine_records(records) for records in by_database.values()]


#: Counts a mix record adds up over its workers, added up over rounds too.
_SUMMED = ("seconds", "unstarted", "increments", "warmup_increments", "uncertain_increments",
           "inserted")  # fmt: skip


def _combine_records(records: list[dict[str, Any]]) -> dict[str, Any]:
    combined = copy.deepcopy(records[0])
    # Each round checked its own dataset; the sum of several checks means nothing.
    combined.pop("changes_found", None)
    for key in _SUMMED:
        if all(key in record for record in records):
            combined[key] = sum(record[key] for record in records)
    combined["intervals"] = [i for record in records for i in record["intervals"]]
    combined["operations"] = {
        name: _combine_operation(
            [r["operations"][name] for r in records if name in r["operations"]]
        )
        for name in records[0]["operations"]
    }
    counters = [r.get("counters") for r in records]
    if all(isinstance(c, dict) for c in counters):
        combined["counters"] = sum_counters(counters)  # type: ignore[arg-type]
    return combined


def _combine_operation(entries: list[dict[str, Any]]) -> dict[str, Any]:
    service = [e["service"] for e in entries if e.get("service")]
    return {
        **entries[0],
        "count": sum(e["count"] for e in entries),
        "latency": encode(merge([e["latency"] for e in entries])),
        "service": encode(merge(service)) if service else entries[0].get("service"),
        "conflicts": sum_counts([e["conflicts"] for e in entries]),
        "retries": sum(e["retries"] for e in entries),
        "failures": sum_counts([e["failures"] for e in entries]),
        "lag_sum_seconds": sum(e["lag_sum_seconds"] for e in entries),
        "lag_max_seconds": max(e["lag_max_seconds"] for e in entries),
    }

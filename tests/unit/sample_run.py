"""A small, exactly known RunResult for the result-file, compare and renderer tests.

Durations are chosen so that rates are round-ish and the spread is known:
two databases, two phases plus steamin, three repetitions, one failed cell.
"""

from __future__ import annotations

import dataclasses

from zodbshootout.results.record import Failure, Measurement, PhaseTiming, RunResult

SECONDS = {"add": 0.1, "cold": 0.05, "steamin": 0.0001}
FACTORS = {"postgresql": 1.0, "zeo_fs": 1.25}
# Relative duration of repetitions 1..3: a spread of a few percent.
REPETITION_FACTORS = (1.0, 1.02, 0.98)


def sample_result(scale: dict[str, float] | None = None) -> RunResult:
    """Two workers × 1000 objects; *scale* multiplies a phase's durations (a "change")."""
    scale = scale or {}
    phases = ["add", "cold", "steamin"]
    measurements = []
    for database, factor in FACTORS.items():
        for repetition, spread in enumerate(REPETITION_FACTORS, 1):
            for phase in phases:
                if database == "zeo_fs" and phase == "steamin":
                    continue  # failed, see below
                for worker in (0, 1):
                    seconds = SECONDS[phase] * factor * spread * scale.get(phase, 1.0)
                    seconds *= 1.0 + 0.01 * worker
                    timing = PhaseTiming(phase, worker, seconds, 1000, 1000, 1000, 0)
                    measurements.append(Measurement(database, 2, 1000, repetition, timing))
    return RunResult(
        databases=list(FACTORS),
        object_counts=[1000],
        concurrencies=[2],
        phases=phases,
        repetitions=3,
        measurements=measurements,
        failures=[Failure("zeo_fs", 2, 1000, ("steamin",), "worker 1 died (killed by SIGKILL)")],
        notes=["zeo_fs: something worth a note | with a pipe"],
        metadata={
            "started": 1_700_000_000.5,
            "finished": 1_700_000_060.25,
            "options": {"aggregate": "mean", "object_counts": [1000]},
            "config": {"path": "local.conf", "text": "password ***\n"},
        },
    )


def with_noise(result: RunResult, database: str, phase: str, factors: tuple) -> RunResult:
    """A copy of *result* whose *database*/*phase* repetitions are scaled by *factors*."""
    measurements = [
        dataclasses.replace(
            m,
            timing=dataclasses.replace(
                m.timing, seconds=m.timing.seconds * factors[m.repetition - 1]
            ),
        )
        if (m.database, m.phase) == (database, phase)
        else m
        for m in result.measurements
    ]
    return dataclasses.replace(result, measurements=measurements)


#: A busy machine's repetitions: relative durations spread by about ±20%.
BUSY_FACTORS = (1.0, 1.25, 0.8, 1.15, 0.85)


def busy_result(slower_cell: tuple[str, str] | None = None, factor: float = 2.0) -> RunResult:
    """24 cells (4 databases × 6 phases), 5 repetitions at a busy machine's spread.

    *slower_cell* (database, phase) takes *factor* times as long: a copy of
    the same run with one cell made slower.
    """
    databases = ["postgresql", "mysql", "mysql_mc", "zeo_fs"]
    phases = ["add", "update", "cold", "hot", "steamin", "warm"]
    measurements = []
    for database in databases:
        for repetition, spread in enumerate(BUSY_FACTORS, 1):
            for phase in phases:
                seconds = 0.1 * spread * (factor if (database, phase) == slower_cell else 1.0)
                timing = PhaseTiming(phase, 0, seconds, 1000, 1000, 1000, 0)
                measurements.append(Measurement(database, 1, 1000, repetition, timing))
    return RunResult(
        databases=databases,
        object_counts=[1000],
        concurrencies=[1],
        phases=phases,
        repetitions=len(BUSY_FACTORS),
        measurements=measurements,
        failures=[],
        notes=[],
        metadata={"options": {"aggregate": "mean", "object_counts": [1000]}},
    )

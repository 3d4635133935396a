"""A mix transaction's latency is the transaction's: choosing its keys is not in it."""

from __future__ import annotations

import dataclasses
import threading

import pytest

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

import transaction
import ZODB
from persistent.mapping import PersistentMapping
from ZODB.MappingStorage import MappingStorage

from zodbshootout.config.loader import ConfigSource
from zodbshootout.mix import keys as mixkeys
from zodbshootout.mix.operations import MIX_KEY, MixObject, Shape, new_dataset
from zodbshootout.mix.worker import MixPlan, MixTask, run_worker
from zodbshootout.mix.workloads import parse_mix
from zodbshootout.results.histogram import decode
from zodbshootout.workload.root import ROOT_KEY

#: What one key draw costs on the fake clock, in seconds.
DRAW_SECONDS = 0.01
OBJECTS = 20


class FakeClock:
    """The worker's clock: it moves only when a key is drawn."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class SlowUniform(mixkeys.Uniform):
    """A uniform chooser whose every draw takes DRAW_SECONDS of the fake clock."""

    clock: FakeClock

    def next(self) -> int:
        self.clock.now += DRAW_SECONDS
        return super().next()


def _database() -> ZODB.DB:
    db = ZODB.DB(MappingStorage())
    with db.transaction() as conn:
        top = conn.root()[ROOT_KEY] = PersistentMapping()
        tree = top[MIX_KEY] = new_dataset()
        for key in range(OBJECTS):
            tree[key] = MixObject(b"x" * 16)
    return db


def test_a_reads_p50_excludes_a_slow_key_draw(monkeypatch):
    clock = FakeClock()
    SlowUniform.clock = clock
    monkeypatch.setitem(
        mixkeys._CHOOSERS, "uniform", lambda count, rng, _hot, _cum: SlowUniform(count, rng)
    )
    workload = dataclasses.replace(parse_mix("read=1"), keys="uniform")
    plan = MixPlan(workload, OBJECTS, Shape(1, 1, 16), 1.0, 0.0, 3)
    task = MixTask(ConfigSource("", "", ""), "mem", (), 0, 1, plan, 10.0)
    db = _database()
    try:
        report = run_worker(task, db, threading.Barrier(1), clock)
    finally:
        db.close()
        transaction.abort()
    read = report["operations"]["read"]
    # About one transaction per draw over the fake second.
    assert read["count"] == pytest.approx(1.0 / DRAW_SECONDS, abs=2)
    latency = decode(read["latency"])
    # The fake clock does not move inside the transaction: only a draw moves it.
    assert latency.get_value_at_percentile(50) < DRAW_SECONDS * 1e6 / 10
    assert latency.get_max_value() < DRAW_SECONDS * 1e6 / 10

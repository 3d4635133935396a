"""A pack while a ``mix`` workload runs against the same database (``pack-under-load``).

mix's own runner measures the foreground (:class:`zodbshootout.mix.runner.MixRunner`,
its dataset, workers, intervals and series); a thread of this process
starts the pack's process (as every operation's, of its own) at once, and
that process starts packing, on cue, once the workers have measured
:data:`LEAD_INTERVALS` intervals.  The mix record's
intervals, on the wall clock from its ``series_origin``, are then split
into before, during and after the pack: each phase's throughput
(transactions over its intervals' seconds) and p99 (the worst of its
intervals' p99s; an interval half inside the pack counts as during).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from zodbshootout.config.loader import LoadedConfig
from zodbshootout.mix.operations import Shape
from zodbshootout.mix.runner import MixOptions, MixRunner
from zodbshootout.mix.worker import MixPlan
from zodbshootout.mix.workloads import BUILTIN
from zodbshootout.storages.servers import EmbeddedServers

#: Measured intervals (of one second) before the pack starts, and after it ends at least.
LEAD_INTERVALS = 2
#: The foreground's dataset: objects of its own, beside the fill's.
LOAD_OBJECTS = 1000
LOAD_WORKLOAD = "ycsb-b"
LOAD_WORKERS = 2


def load_options(
    expected_seconds: float, object_size_bytes: int, duration: float | None = None
) -> MixOptions:
    """A mix long enough for the lead, the pack (thrice its time alone) and the tail.

    *duration* (seconds) overrides that estimate (``--load-seconds``).
    """
    if duration is None:
        duration = 2 * LEAD_INTERVALS + max(4.0, 3 * expected_seconds)
    plan = MixPlan(
        BUILTIN[LOAD_WORKLOAD], LOAD_OBJECTS, Shape(5, 50, object_size_bytes),
        float(round(duration)), 1.0, 33,
    )  # fmt: skip
    return MixOptions(plan, LOAD_WORKERS)


def pack_under_load(
    config: LoadedConfig,
    servers: EmbeddedServers,
    name: str,
    options: MixOptions,
    pack: Callable[[threading.Event], dict[str, Any]],
    say: Callable[[str], None],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the pack's record, the foreground's phases) for database *name*."""
    started = threading.Event()
    times: dict[str, Any] = {}

    def heard(line: str) -> None:
        if f": {LEAD_INTERVALS:5d} s:" in line:  # the workers' interval lines
            started.set()
        say(line)

    def packing() -> None:
        # The pack's process prepares at once and starts packing on cue.
        try:
            times["record"] = pack(started)
        except Exception as e:  # the database's failure: raised in the runner's thread
            times["error"] = e

    thread = threading.Thread(target=packing, name="pack-under-load", daemon=True)
    alone = LoadedConfig(config.source, {name: config.databases[name]})
    runner = MixRunner(alone, options, heard)
    thread.start()
    try:
        runner.measure_database(servers, name)
    finally:
        started.set()
        thread.join()
    if "error" in times:
        raise times["error"]
    packed = times["record"]
    if "wall" not in packed:  # the pack failed: no phases to split
        return packed, {}
    start, end = packed.pop("wall")
    return packed, phases(runner.result.mix[-1], start, end)


def phases(record: dict[str, Any], start: float, end: float) -> dict[str, Any]:
    """The foreground's throughput and worst p99 before, during and after [start, end]."""
    origin = record.get("series_origin")
    if origin is None:  # (a mix record without its intervals' wall clock)
        return {}
    step = float(record.get("interval_seconds") or 1.0)
    split: dict[str, list[dict[str, Any]]] = {"before": [], "during": [], "after": []}
    for index, interval in enumerate(record.get("intervals", [])):
        low = origin + index * step
        high = low + step
        phase = "before" if high <= start else "after" if low >= end else "during"
        split[phase].append(interval)
    summary: dict[str, Any] = {"pack_seconds_wall": end - start}
    for phase, intervals in split.items():
        transactions = sum(int(i.get("transactions", 0)) for i in intervals)
        p99s = [i["p99_us"] for i in intervals if i.get("p99_us") is not None]
        summary[phase] = {
            "intervals": len(intervals),
            "transactions_per_second": transactions / (len(intervals) * step)
            if intervals
            else None,
            "p99_ms": max(p99s) / 1000 if p99s else None,
        }
    return summary

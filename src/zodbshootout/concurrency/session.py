"""The concurrency modes' names and what every session offers the runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from zodbshootout.concurrency.worker import StageOutcome, StageTask
from zodbshootout.config import ConfigSource
from zodbshootout.options import (
    GEVENT,
    MODES,
    PROCESSES,
    SHARED,
    SHARINGS,
    THREADS,
    UNIQUE,
    RunOptions,
)
from zodbshootout.phases import Step

__all__ = ["GEVENT", "MODES", "PROCESSES", "SHARED", "SHARINGS", "THREADS", "UNIQUE"]
__all__ += ["Session", "SessionSpec", "stage_tasks"]


@dataclass(frozen=True)
class SessionSpec:
    """What a session needs; plain data, sent to the gevent child as is."""

    source: ConfigSource
    database: str
    server_addresses: tuple[tuple[str, int], ...]
    concurrency: int
    mode: str = PROCESSES
    sharing: str = SHARED  # threads and gevent only


class Session(Protocol):
    """One repetition's workers: populate the database, then run its stages."""

    def populate(self, fill: Callable[[Any], None]) -> None: ...
    def run_stage(self, tasks: list[StageTask], timeout_seconds: float) -> StageOutcome: ...
    def close(self) -> None: ...


def stage_tasks(
    spec: SessionSpec, options: RunOptions, count: int, repetition: int, steps: list[Step]
) -> list[StageTask]:
    """The tasks of one stage of one repetition, one per worker of *spec*."""
    profile_prefix = None
    if options.profile_dir:
        safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in spec.database)
        profile_prefix = f"{options.profile_dir}/{safe}-n{count}-c{spec.concurrency}-r{repetition}"
    return [
        StageTask(
            source=spec.source,
            database=spec.database,
            server_addresses=spec.server_addresses,
            worker=worker,
            object_count=count,
            object_size_bytes=options.object_size_bytes,
            steps=tuple(steps),
            barrier_timeout_seconds=options.timeout_seconds,
            profile_prefix=profile_prefix,
            leaks=options.leaks,
            log=options.log,
            blobs=options.blobs,
            fault=options.fault,
        )
        for worker in range(spec.concurrency)
    ]

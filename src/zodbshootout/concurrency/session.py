"""The concurrency modes' names and what every session offers the runner."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from zodbshootout.concurrency.worker import StageOutcome, StageTask
from zodbshootout.config import ConfigSource

PROCESSES = "processes"
THREADS = "threads"
GEVENT = "gevent"
MODES = (PROCESSES, THREADS, GEVENT)
SHARED = "shared"
UNIQUE = "unique"
SHARINGS = (SHARED, UNIQUE)


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

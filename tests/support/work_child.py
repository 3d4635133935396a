"""Run one worker's stages with --work's counting, reading the server's own count
at each barrier (the test's independent count).

Usage::

    python work_child.py CONFIG DATA_DIR N zeo PORT
    python work_child.py CONFIG DATA_DIR N pglog LOGFILE DATABASE

prints JSON: one record per timed step: its phase, the worker's work counts,
and what the server counted over the step's timed region (between its two
barriers): a ZEO server's ``server_status`` loads, stores and commits, or
the statements PostgreSQL logged (``log_statement = all``, ``%d|`` prefix).
"""

from __future__ import annotations

import json
import pathlib
import sys
from collections.abc import Callable

from zodbshootout.concurrency.worker import StageTask, execute_stage
from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.phases.classic import Step
from zodbshootout.phases.setup import repetition_filler

PHASES = ("add", "update", "cold", "prefetch", "hot", "steamin", "open")
ZEO_STATS = ("loads", "stores", "commits")


class ReadingBarrier:
    """One worker's barrier that reads the server's own counts each time it is passed."""

    def __init__(self, read: Callable[[], dict[str, int]]) -> None:
        self.read = read
        self.readings: list[dict[str, int]] = []

    def wait(self, timeout: float | None = None) -> int:
        self.readings.append(self.read())
        return 0

    def abort(self) -> None:
        pass


def zeo_reader(port: int) -> Callable[[], dict[str, int]]:
    from ZEO.ClientStorage import ClientStorage

    status = ClientStorage(("127.0.0.1", port), wait_timeout=10, read_only=True)

    def read() -> dict[str, int]:
        now = status.server_status()
        return {name: int(now[name]) for name in ZEO_STATS}

    return read


def statement_log_reader(log: str, database: str) -> Callable[[], dict[str, int]]:
    def read() -> dict[str, int]:
        text = pathlib.Path(log).read_text(errors="replace")
        logged = sum(
            1
            for line in text.splitlines()
            if line.startswith(f"{database}|") and "statement: " in line
        )
        return {"statements": logged}

    return read


def main(config_path: str, data_dir: str, n: int, mode: str, *where: str) -> None:
    config = load_config(config_path, data_dir)
    name = next(iter(config.databases))
    db = open_database(config.source, name, [], client_label="fill")
    repetition_filler(1, n, PHASES, None)(db)
    db.close()
    read = zeo_reader(int(where[0])) if mode == "zeo" else statement_log_reader(*where)
    records = []
    for steps in (PHASES[:2], PHASES[2:]):
        barrier = ReadingBarrier(read)
        task = StageTask(
            source=config.source,
            database=name,
            server_addresses=(),
            worker=0,
            object_count=n,
            object_size_bytes=128,
            steps=tuple(Step(phase) for phase in steps),
            barrier_timeout_seconds=30,
            work=True,
        )
        for index, timing in enumerate(execute_stage(task, barrier)):
            before, after = barrier.readings[2 * index], barrier.readings[2 * index + 1]
            server = {key: after[key] - before[key] for key in after}
            records.append({"phase": timing.phase, "work": timing.work, "server": server})
    print(json.dumps(records))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:])

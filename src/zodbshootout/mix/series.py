"""The servers' series during a mix run: a sampler thread of the runner's, untimed.

The workers sample the client's series themselves (probes.series); the
servers' are read here, in the runner's process, through a client of the
sampler's own, and put on the workers' time axis in the database's record.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from zodbshootout import storages
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.database.open import open_database
from zodbshootout.probes.series import MachineSampler, SamplerThread, open_samplers
from zodbshootout.run.skeleton import Addresses, describe_error


@contextlib.contextmanager
def server_series(
    config: LoadedConfig, name: str, addresses: Addresses, interval_seconds: float
) -> Iterator[SamplerThread]:
    """The servers' series sampled in a thread while the workers run (untimed).

    The samplers read through a client of their own, opened here in the
    runner's process; one that can't open or read is a note, never a failure.
    """
    db = None
    notes: list[str] = []
    samplers: list[Any] = []
    if storages.samples_servers(config.databases[name]):
        try:
            db = open_database(config.source, name, list(addresses), "sampler")
        except Exception as e:
            notes.append(f"server series not sampled: {describe_error(e)}")
        else:
            # Its pooled connection (the root check's) would gather every oid the
            # workers commit (ZODB's MVCC invalidations, never polled): gone at once.
            db.setPoolSize(0)
            samplers, notes = open_samplers(
                [("server", lambda: storages.server_samplers(db.storage))]
            )
    # The machine's CPU beside them, always: a decay that is the machine's is told apart.
    thread = SamplerThread([*samplers, MachineSampler()], interval_seconds)
    thread.notes.extend(notes)
    thread.start()
    try:
        yield thread
    finally:
        thread.stop()
        if db is not None:
            with contextlib.suppress(Exception):
                db.close()


def add_server_series(record: dict[str, Any], sampling: SamplerThread) -> None:
    """The sampler thread's series on the workers' time axis; its notes, once each
    (the table shows them under the database's rows)."""
    origin = record.get("series_origin")
    if origin is not None:
        # Samples of the warm-up are dropped but the last (a baseline at t <= 0).
        record["series"].update(sampling.series.as_data(origin, since=origin))
    cost = record.setdefault("series_cost", {})
    cost["sampler_cpu_seconds"] = round(sampling.cpu_seconds, 6)
    cost["sampler_samples"] = sampling.samples
    notes = record.setdefault("series_notes", [])
    for note in sampling.notes:
        if note not in notes:
            notes.append(note)

"""Fill every database of a configuration (``zodbshootout fill``): a mode on run.skeleton.

The skeleton starts the embedded servers (a ZEO server's FileStorage is
filled through the server, as clients would write it), turns Ctrl-C and
SIGTERM into an orderly stop, and refuses a database whose root holds data
the tool did not write, with the same words as every run.  Each database is
filled in this process, batch after batch (:func:`.fill.fill`), at the
storage's own speed; its outcome goes to ``metadata["fill"]``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from functools import partial

from zodbshootout.config.loader import LoadedConfig
from zodbshootout.database.open import open_database
from zodbshootout.database.state import refuse_foreign_data
from zodbshootout.maintenance.fill import FillOutcome, FillShape, fill
from zodbshootout.results.record import Failure, RunResult
from zodbshootout.run.skeleton import RunnerSkeleton
from zodbshootout.storages.servers import EmbeddedServers

FILL_PHASE = "fill"


class FillRunner(RunnerSkeleton):
    """Fills each database of *config* to *objects* objects of *shape*."""

    def __init__(
        self,
        config: LoadedConfig,
        objects: int,
        shape: FillShape,
        batch: int,
        progress: Callable[[str, int, int], None] = lambda name, done, total: None,
    ) -> None:
        result = RunResult.one_pass(config.names, [objects], phases=(FILL_PHASE,))
        super().__init__(config, result)
        self.objects, self.shape, self.batch = objects, shape, batch
        self.progress = progress
        self.outcomes: dict[str, FillOutcome] = {}
        result.metadata["fill"] = {"objects": objects, "shape": asdict(shape), "databases": {}}

    def measure(self, servers: EmbeddedServers) -> None:
        for name in self.config.names:
            self.set_up(name, partial(self._fill, servers, name))

    def fail_unsettled(self, name: str, reason: str) -> None:
        self.result.failures.append(Failure(name, 1, self.objects, (FILL_PHASE,), reason))
        if name not in self.outcomes:
            self.result.setup_failed.append(name)

    def _batch(self, name: str, done: int, total: int) -> None:
        """After each batch: progress, and a stop if a signal came.

        A signal's KeyboardInterrupt raised inside a finalizer or a callback
        (the storage's, the garbage collector's) is printed and dropped by
        Python: the handler's note in ``received`` is not.
        """
        self.progress(name, done, total)
        if self.received:
            raise KeyboardInterrupt()

    def _fill(self, servers: EmbeddedServers, name: str) -> None:
        db = open_database(self.config.source, name, servers.addresses(name), client_label="fill")
        try:
            refuse_foreign_data(db)
            outcome = fill(db, self.objects, self.shape, self.batch, partial(self._batch, name))
        finally:
            db.close()
        self.outcomes[name] = outcome
        self.result.metadata["fill"]["databases"][name] = {
            **asdict(outcome),
            "objects_written": outcome.objects_written,
        }

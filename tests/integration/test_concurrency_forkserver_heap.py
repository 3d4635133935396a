"""The fork server freezes the heap its preloads built (concurrency.forkserver_heap).

A process forked from it starts with those objects out of the collector's
generations; importing the module anywhere else freezes nothing.
"""

from __future__ import annotations

import gc
import importlib

from zodbshootout.concurrency.processes import ProcessSession
from zodbshootout.concurrency.session import SessionSpec
from zodbshootout.config.loader import load_config


def frozen_objects(_db) -> int:
    """A fill that reports, from the populating process, how many objects are frozen."""
    return gc.get_freeze_count()


def test_a_process_forked_from_the_fork_server_inherits_a_frozen_heap(tmp_path):
    path = tmp_path / "fs.conf"
    path.write_text(
        f"<zodb db>\n  <filestorage>\n    path {tmp_path}/data.fs\n  </filestorage>\n</zodb>\n"
    )
    config = load_config(str(path), str(tmp_path))
    session = ProcessSession(SessionSpec(config.source, "db", (), 1))
    # ZODB, RelStorage, ZEO and the drivers: tens of thousands of objects.
    assert session.populate(frozen_objects) > 10_000


def test_importing_it_elsewhere_freezes_nothing():
    before = gc.get_freeze_count()
    module = importlib.reload(importlib.import_module("zodbshootout.concurrency.forkserver_heap"))
    assert not module.imported_by_the_fork_server()
    # Not more: frozen objects that the reload frees leave the count (the
    # suite freezes its own heap before each integration test).
    assert gc.get_freeze_count() <= before

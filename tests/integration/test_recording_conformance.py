"""ZODB's own checks of a storage (ZODB.tests) pass on a recorded FileStorage.

Threads (MTStorage) and packs make them slow for tests/unit; they start no process.
"""

import glob

from ZODB.FileStorage import FileStorage
from ZODB.tests import (
    BasicStorage,
    ConflictResolution,
    HistoryStorage,
    IteratorStorage,
    MTStorage,
    PackableStorage,
    RevisionStorage,
    StorageTestBase,
    Synchronization,
)

from zodbshootout.recording import open_trace, record
from zodbshootout.recording.format import Op


class RecordedFileStorageTests(
    StorageTestBase.StorageTestBase,
    BasicStorage.BasicStorage,
    RevisionStorage.RevisionStorage,
    PackableStorage.PackableStorageWithOptionalGC,
    Synchronization.SynchronizedStorage,
    ConflictResolution.ConflictResolvingStorage,
    HistoryStorage.HistoryStorage,
    IteratorStorage.IteratorStorage,
    MTStorage.MTStorage,
):
    """ZODB's own checks of a storage (ZODB.tests), on a recorded FileStorage."""

    use_extension_bytes = True  # as ZODB's FileStorageTests: FileStorage keeps them

    def open(self, **kwargs):
        self._storage = record(FileStorage("Recorded.fs", **kwargs), "trace", max_size=1 << 20)

    def setUp(self):
        StorageTestBase.StorageTestBase.setUp(self)
        self.open(create=1)

    def tearDown(self):
        StorageTestBase.StorageTestBase.tearDown(self)
        for path in glob.glob("trace.*.zodbtrace"):
            open_trace(path)  # every trace the checks left is readable
            assert all(r.op in Op for r in open_trace(path).records())

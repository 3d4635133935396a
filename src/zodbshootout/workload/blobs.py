"""ZODB blobs as the measured objects (``--blobs``), and emptying blob caches.

With ``--blobs`` every measured object is a :class:`ZODB.blob.Blob` whose
file holds the payload: add creates one blob per object, update rewrites
each blob's file, and every read phase opens each blob and reads its bytes
back, so that the check after the phase compares what the file really holds.

Where a client keeps a *cache* of blob files (a ZEO client with its own
``blob-dir``, RelStorage with ``shared-blob-dir false``), a cold read must
not find the files there: :func:`clear_blob_cache` deletes the cached files
so that they are fetched from the server again.  A blob directory that *is*
the storage (FileStorage's ``blob-dir``, a shared blob directory) is never
touched; a cold read from it still may be served by the operating system's
file cache, which the tool does not (and without root cannot) empty.
"""

from __future__ import annotations

from typing import Any

from ZODB.blob import Blob
from ZODB.interfaces import IBlobStorage

from zodbshootout import storages
from zodbshootout.errors import CellError
from zodbshootout.storages.base import remove_blob_files


def require_blob_support(db: Any, database: str = "") -> None:
    """Raise CellError unless the database's storage can store blobs.

    Checked before anything is written, so a storage without a blob
    directory fails its cells with the reason instead of a ZODB traceback.
    """
    storage = db.storage
    if IBlobStorage.providedBy(storage):
        return
    name = f"{database}: " if database else ""
    raise CellError(
        f"{name}--blobs needs a storage with blob support, and {type(storage).__name__} "
        "has none here: give the storage section a blob-dir (see etc/blobs.conf)"
    )


def new_blob(payload: bytes) -> Blob:
    """A new blob whose file holds *payload*."""
    return Blob(payload)


def rewrite_blob(blob: Blob, payload: bytes) -> None:
    """Replace the blob's bytes; the storage writes a new blob file at commit."""
    with blob.open("w") as file:
        file.write(payload)


def read_blob(blob: Blob) -> bytes:
    """Open the blob's committed file and read all of its bytes."""
    with blob.open("r") as file:
        return file.read()


def client_blob_cache_dir(storage: Any) -> str | None:
    """The directory of the storage client's blob *cache*, or None if it has none.

    None for a storage whose blob directory holds the only copy of the
    blobs (FileStorage, shared blob directories) and for storages without
    blobs.
    """
    return storages.kind_of(storage).blob_cache_dir(storage)


def clear_blob_cache(storage: Any) -> int:
    """Delete the blob files a client cached; return how many were deleted.

    Only ``*.blob`` files go: the cache's layout marker, lock and temporary
    directory stay, so the client keeps working and fetches each blob again.
    """
    return remove_blob_files(client_blob_cache_dir(storage))

"""Raw key-value floors: the benchmark's add/update/read work without ZODB.

A ``<rawkv NAME>`` section (see :mod:`zodbshootout.rawkv.section`) names a
store — LMDB (``lmdb``), LevelDB (``plyvel``) or SQLite (``sqlite3``) — that
the same workers fill with the same payloads, N records per transaction, to
show what the ZODB layers (pickling, connections, caches, storage protocol)
add on top of the bare store.  :mod:`.backends` wraps each store,
:mod:`.stage` runs a worker's phases on one.
"""

from zodbshootout.rawkv.section import BACKENDS, RawKVSection, is_rawkv

__all__ = ["BACKENDS", "RawKVSection", "is_rawkv"]

"""Record what an application asks of its storage, and read it back.

``record(storage, prefix)`` wraps any ZODB storage (or the ``<recording>``
section of a configuration does it): every storage-level call — loads,
prefetches, stores, the two-phase commit, invalidation polls — is written to
``PREFIX.PID.N.zodbtrace`` files as 32-byte records of sizes and identities,
never the objects' contents.  ``open_trace(path)`` reads one back.

Imports are deferred so that ``import zodbshootout.recording`` loads no ZODB
until a storage is wrapped (the trace reader needs none).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zodbshootout.recording.reader import Trace, TraceError, open_trace
    from zodbshootout.recording.wrapper import RecordingStorage, record

__all__ = ["RecordingStorage", "Trace", "TraceError", "open_trace", "record"]

_HOMES = {
    "RecordingStorage": "zodbshootout.recording.wrapper",
    "record": "zodbshootout.recording.wrapper",
    "Trace": "zodbshootout.recording.reader",
    "TraceError": "zodbshootout.recording.reader",
    "open_trace": "zodbshootout.recording.reader",
}


def __getattr__(name: str) -> Any:
    import importlib  # lazy: the wrapper imports ZODB, the reader does not

    if name not in _HOMES:
        raise AttributeError(name)
    return getattr(importlib.import_module(_HOMES[name]), name)

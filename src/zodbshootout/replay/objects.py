"""The objects a replay writes: opaque payloads of a recorded size, always resolvable.

A replay writes records of the sizes the trace recorded, never their
contents (a trace holds none).  Each is a real ZODB record of
:class:`ReplayObject`, so that storages, their servers and their tools read
it as any other; and since a replay interleaves the recorded connections as
it goes, a write that the recording committed may meet another in the
replay: ZODB's conflict resolution settles it (the last writer wins),
counted, so that what committed in the recording commits in the replay.
"""

from __future__ import annotations

import os
from typing import Any

from persistent import Persistent

#: Bytes of payload kept to slice from (records repeat them).
_PATTERN = os.urandom(1 << 16)


class ReplayObject(Persistent):
    """An object whose state is a payload of bytes; conflicts resolve to the newer state."""

    def __init__(self, payload: bytes = b"") -> None:
        self.payload = payload

    def _p_resolveConflict(self, old: Any, committed: Any, new: Any) -> Any:
        # The replay's writes carry no meaning to merge: the last one wins.
        return new


def payload_bytes(length: int) -> bytes:
    """*length* bytes that don't compress much (a slice of a random pattern, repeated)."""
    whole, rest = divmod(length, len(_PATTERN))
    return _PATTERN * whole + _PATTERN[:rest]


def _record(payload_length: int) -> bytes:
    from ZODB.serialize import ObjectWriter  # lazy: the plan reads traces without ZODB

    return bytes(ObjectWriter().serialize(ReplayObject(payload_bytes(payload_length))))


class Records:
    """Records of :class:`ReplayObject` by size, made once each (untimed, before a replay).

    A record is as big as asked when it can be: never below the smallest
    record (an empty payload, about 60 bytes), and a few sizes around 256
    bytes, where the pickle's length field grows, come out up to 3 bytes
    bigger.  :attr:`raised_bytes` counts what all that added.
    """

    def __init__(self) -> None:
        self._made: dict[int, bytes] = {}
        empty = len(_record(0))
        self.smallest = empty
        self._short_overhead = empty  # payloads below 256 bytes: a 1-byte length
        self._long_overhead = len(_record(256)) - 256

    def of_size(self, size: int) -> bytes:
        made = self._made.get(size)
        if made is None:
            made = self._made[size] = self._make(size)
        return made

    def _make(self, size: int) -> bytes:
        short = size - self._short_overhead
        if 0 <= short < 256:
            return _record(short)
        long_ = size - self._long_overhead
        return _record(max(long_, 256) if short >= 0 else 0)

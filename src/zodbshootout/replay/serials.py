"""The serial each replayed object has in the storage, shared by a replay's workers.

A store names the serial it writes over: the revision its connection sees
(a ZODB connection's is the one it loaded).  A storage that holds a newer
one sees a conflict, and resolves it from that revision: RelStorage loads
it from the connection's snapshot and refuses one that is not there
(``CacheConsistencyError``).  A ZODB connection that a poll tells an object
changed loads it again before it writes it, and the recording holds every
such load its connections made; but the replay's workers interleave the
recorded connections in their own way, so one of its polls may name a
change that, in the recording, came after the write.  Loading the object
then would be a load the application never made; the replay learns the
revision from this table instead.

The replay is the only writer of its dataset, so it knows each revision:
the dataset's, then each replayed commit's.  The table, a file every worker
maps (processes and threads alike), holds per recorded oid index its last
:data:`HISTORY` entries, newest first, 8 bytes each, then 8 bytes per
commit slot.  An entry is a serial (as ZODB has it, big-endian), or a
*token*: the top bit set and a commit slot's number.  A worker about to
call ``tpc_finish`` (its vote passed: it holds the commit lock on its
objects, so no other commit of them comes between) puts its slot's token
first in the entries of the objects it stored, then the tid in its slot
once ``tpc_finish`` returns.  Every commit a poll can name has its token in
the table before it could be seen.  The revision a connection sees is the
newest entry no newer than its view (``lastTransaction()``), a token read
from its slot, waiting while the slot is empty (that commit is finishing);
a commit whose ``tpc_finish`` raised puts the entries back and marks its
slot :data:`FAILED`, skipped.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import time
from typing import Any

from ZODB.utils import p64

#: Bytes per serial (and per slot) in the table.
SERIAL_BYTES = 8
#: Entries kept per oid: a connection finds its revision among the last four commits.
HISTORY = 4
#: Bytes per oid, and its shift.
OID_BYTES = SERIAL_BYTES * HISTORY
OID_SHIFT = 5
#: The top bit of an entry that is a token (a tid's is never set: that is the year 4000).
TOKEN_BIT = 0x80
#: A slot's value while its commit finishes, and once its commit failed.
PENDING = bytes(SERIAL_BYTES)
FAILED = b"\xff" * SERIAL_BYTES
#: What a connection knows of an object a poll said changed: "the table's".
IN_TABLE = b"\xc0" + bytes(SERIAL_BYTES - 1)


def write_table(directory: str, serials: list[int], slots: int) -> str:
    """A new table in *directory*: *serials* (0: a reserved oid), then *slots* empty slots."""
    handle, path = tempfile.mkstemp(prefix="replay-serials-", suffix=".bin", dir=directory)
    with os.fdopen(handle, "wb") as file:
        file.write(b"".join(p64(serial) * HISTORY for serial in serials))
        # At least one slot: a file of no bytes can't be mapped.
        file.write(PENDING * max(slots, 1))
    return path


def open_table(path: str) -> Any:
    """The table at *path*, mapped shared."""
    with open(path, "r+b") as file:
        return mmap.mmap(file.fileno(), 0)


def first_entries(table: Any, objects: int) -> bytes:
    """Each oid's newest entry, 8 bytes per oid index (before any worker commits)."""
    return b"".join(
        table[index << OID_SHIFT : (index << OID_SHIFT) + SERIAL_BYTES] for index in range(objects)
    )


def token(slot: int) -> bytes:
    """The entry that names commit slot *slot*."""
    return (slot | (TOKEN_BIT << 56)).to_bytes(SERIAL_BYTES, "big")


class Slots:
    """A worker's view of the table: revisions its connections see, its commits published."""

    def __init__(self, table: Any, objects: int, first: int) -> None:
        self.table = table
        self.base = objects * OID_BYTES  # where slot 0 starts
        self.next = first  # this worker's next slot
        #: Revisions that a commit still finishing named, waited for.
        self.waits = 0

    def serial(self, oid: int, instance: Any) -> bytes:
        """The revision of *oid* that *instance* sees: the newest entry no newer than its view."""
        at = oid << OID_SHIFT
        entries = self.table[at : at + OID_BYTES]
        view = instance.lastTransaction()
        serial = entries[:SERIAL_BYTES]
        for start in range(0, OID_BYTES, SERIAL_BYTES):
            entry = entries[start : start + SERIAL_BYTES]
            serial = self._slot(entry) if entry[0] & TOKEN_BIT else entry
            if serial != FAILED and serial <= view:
                break
        return serial

    def _slot(self, entry: bytes) -> bytes:
        """The tid in the slot *entry* names (FAILED for a failed commit), once it is there."""
        at = self.base + ((int.from_bytes(entry, "big") & ~(TOKEN_BIT << 56)) << 3)
        table, waited = self.table, False
        value = table[at : at + SERIAL_BYTES]
        while value == PENDING:
            waited = True
            time.sleep(0)
            value = table[at : at + SERIAL_BYTES]
        self.waits += waited
        return value

    def mark(self, stored: list[int]) -> list[bytes]:
        """Before ``tpc_finish``: *stored*'s entries start with the next slot's token;
        what they held."""
        table, name = self.table, token(self.next)
        held = [table[oid << OID_SHIFT : (oid << OID_SHIFT) + OID_BYTES] for oid in stored]
        for oid, entries in zip(stored, held, strict=True):
            at = oid << OID_SHIFT
            table[at : at + OID_BYTES] = name + entries[: OID_BYTES - SERIAL_BYTES]
        return held

    def publish(self, tid: bytes) -> None:
        """``tpc_finish`` returned *tid*: the slot holds it."""
        at = self.base + (self.next << 3)
        self.table[at : at + SERIAL_BYTES] = tid
        self.next += 1

    def failed(self, stored: list[int], held: list[bytes]) -> None:
        """``tpc_finish`` raised: the entries hold what they held, the slot says so."""
        table = self.table
        for oid, entries in zip(stored, held, strict=True):
            table[oid << OID_SHIFT : (oid << OID_SHIFT) + OID_BYTES] = entries
        at = self.base + (self.next << 3)
        table[at : at + SERIAL_BYTES] = FAILED
        self.next += 1

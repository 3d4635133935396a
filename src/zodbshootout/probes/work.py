"""The work a phase's timed region did, counted exactly: ``--work``'s counting pass.

What a transaction asks of its storage explains its time: how many objects
it loaded and from where, how many times it waited on a server, how many
bytes went each way, how many polls it made.  These counts are exact (the
same transactions do the same work), so ``compare`` can gate on them where
times are noise.

Counting some of them costs a Python call per load, statement or request,
which would lower the rates; so they are counted only in the untimed
warm-up repetition of a ``--work`` run, in worker processes of their own
(the timed repetitions' workers install nothing).  The counters are read
beside the phase's clock, before it starts and after it stops (as
probes.counts.MeteredClock reads statements), so only the timed region's
work counts: a looped phase's untimed open and close stay out.

The counts (see WORK_COUNTS in zodbshootout.results.work for their meaning)
come from ZODB's own counters (the connections' loads and stores), from
wrappers this module installs on ZODB's connection and serializer (prefetch,
state bytes, polls), and from the storage kinds' request counters (objects
fetched from the server, round trips).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from zodbshootout import storages
from zodbshootout.probes.base import Clock, Probe, Step

__all__ = ["COUNTED", "WorkMeter", "install"]

#: The counts, in the order results.work.WORK_COUNTS describes them (a unit
#: test holds the two equal; probes/ can't import results/).
COUNTED = (
    *("loads", "server_loads", "prefetch_calls", "prefetched_objects", "stores"),
    *("round_trips", "bytes_read", "bytes_written", "polls", "invalidations"),
)


class TransferCounts(Protocol):
    """The connections' counts (phases.caches.Counters): loads, stores, from the store."""

    @property
    def loads(self) -> int: ...
    @property
    def storage_loads(self) -> int | None: ...
    @property
    def stores(self) -> int: ...


#: What the wrappers below count in this process, cumulatively.
_counted = {
    "prefetch_calls": 0,
    "prefetched_objects": 0,
    "bytes_read": 0,
    "bytes_written": 0,
    "polls": 0,
    "invalidations": 0,
}
_installed: list[bool] = []


def install() -> None:
    """Count prefetches, state bytes and polls in this process from now on (idempotent).

    Only in a counting pass's worker processes: a wrapper is a Python call
    per object, which the timed repetitions must not pay.
    """
    if _installed:
        return
    from ZODB.Connection import Connection
    from ZODB.serialize import ObjectReader, ObjectWriter

    _count_prefetches(Connection)
    _count_polls(Connection)
    _count_state_bytes(ObjectReader, ObjectWriter)
    _installed.append(True)


def _count_prefetches(connection_class: Any) -> None:
    """Each ``Connection.prefetch`` call and the oids it asks for (what the application asked)."""
    original = connection_class._prefetch_flatten

    def flatten(self: Any, args: Any) -> Any:
        oids = list(original(self, args))
        _counted["prefetch_calls"] += 1
        _counted["prefetched_objects"] += len(oids)
        return iter(oids)

    connection_class._prefetch_flatten = flatten


def _count_polls(connection_class: Any) -> None:
    """Each poll for invalidations a connection makes, and the objects it invalidated.

    ``newTransaction`` asks its storage instance; the instance's method is
    shadowed for that one call, so every storage kind counts the same way.
    """
    original = connection_class.newTransaction

    def new_transaction(self: Any, transaction: Any, sync: bool = True) -> Any:
        storage = self._storage
        poll = storage.poll_invalidations

        def counted_poll() -> Any:
            invalidated = poll()
            _counted["polls"] += 1
            # None: the storage asks to drop the whole cache.
            _counted["invalidations"] += len(invalidated) if invalidated is not None else 0
            return invalidated

        own = vars(storage).get("poll_invalidations")  # an instance's own, kept
        storage.poll_invalidations = counted_poll
        try:
            return original(self, transaction, sync)
        finally:
            if own is None:
                del storage.poll_invalidations
            else:
                storage.poll_invalidations = own

    connection_class.newTransaction = new_transaction


def _count_state_bytes(reader_class: Any, writer_class: Any) -> None:
    """The bytes of the object states connections loaded and handed to the storage."""
    set_state = reader_class.setGhostState
    serialize = writer_class.serialize

    def set_ghost_state(self: Any, obj: Any, pickle: bytes) -> Any:
        _counted["bytes_read"] += len(pickle)
        return set_state(self, obj, pickle)

    def serialized(self: Any, obj: Any) -> bytes:
        state: bytes = serialize(self, obj)
        _counted["bytes_written"] += len(state)
        return state

    reader_class.setGhostState = set_ghost_state
    writer_class.serialize = serialized


def snapshot(db: Any, transfers: TransferCounts) -> dict[str, int | None]:
    """Every work count of this process so far (None: not counted for this storage)."""
    now: dict[str, int | None] = dict(_counted)
    now["loads"] = transfers.loads
    now["server_loads"] = transfers.storage_loads
    now["stores"] = transfers.stores
    now["round_trips"] = storages.kind_of(db.storage).round_trips(db.storage)
    return {name: now[name] for name in COUNTED}


class WorkMeter(Probe):
    """``work``: the counts of the step's timed region (see the module doc).

    The counters are read just before the clock starts and just after it
    stops, in every start/stop pair the phase makes.
    """

    def __init__(self, db: Any, transfers: Callable[[], TransferCounts]) -> None:
        self.db = db
        self.transfers = transfers  # the connections' counts now (phases.caches.counters)
        self._metered: _WorkClock | None = None

    def clock(self, clock: Clock) -> Clock:
        self._metered = _WorkClock(clock, lambda: snapshot(self.db, self.transfers()))
        return self._metered

    def after(self, step: Step) -> dict[str, Any]:
        return {"work": None if self._metered is None else self._metered.counted()}


class _WorkClock:
    """A clock that adds up the work counts between each start and its stop."""

    def __init__(self, clock: Clock, read: Callable[[], dict[str, int | None]]) -> None:
        self._clock = clock
        self._read = read
        self._calls = 0
        self._started: dict[str, int | None] = {}
        self._totals: dict[str, int | None] | None = None

    def __call__(self, /) -> float:
        starting = self._calls % 2 == 0
        self._calls += 1
        if starting:
            self._started = self._read()  # before the clock starts: untimed
            return self._clock()
        seconds = self._clock()
        now = self._read()  # after it stopped
        totals: dict[str, int | None] = self._totals or dict.fromkeys(now, 0)
        for name, value in now.items():
            before, total = self._started.get(name), totals.get(name)
            if value is None or before is None or total is None:
                totals[name] = None  # not counted at one of the readings
            else:
                totals[name] = total + value - before
        self._totals = totals
        return seconds

    def counted(self) -> dict[str, int | None] | None:
        """The totals over the step's timed pairs; None if the clock never stopped."""
        return self._totals

"""The caches a trace is replayed through, each the library's own code.

Every policy replays the same :class:`~zodbshootout.cachesim.records.Access`
records the same way: a read is a load, a hit when the cache holds the
object, and on a miss the object is put in the cache (as a client does
with what the server sent); a store of the revision last seen (a
prefetch) fills the cache as a miss does; a store of a new one puts it in
place of the old; an invalidation drops the object.

- ``zeo``: ZEO's own simulation of its client cache
  (``ZEO.scripts.cache_simul.CircularCacheSimulation``: one circular file,
  each record 43 bytes more than its data), driven record by record.
- ``relstorage``: RelStorage's local cache itself (``relstorage.cache.
  local_client.LocalClient``: eden, probation and protected generations,
  admission by frequency), keyed by (oid, tid) as RelStorage keys it, with
  RelStorage's default options but for the size and no compression.  Its
  size is given in MB of 1,000,000 bytes (``cache-local-mb``), as
  RelStorage computes its limit.
- ``lru``: a byte-bounded LRU from cachetools (``LRUCache`` weighing each
  entry by its size): the textbook baseline, with no per-entry overhead.

A policy's time is the wall time of its replay (``time.perf_counter``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from zodbshootout.cachesim.records import INVALIDATE, READ, Access
from zodbshootout.results.cachesim import Outcome

#: The smallest cache simulated: below it ZEO's simulation can't hold one
#: ordinary object and RelStorage's generations round to nothing.
MIN_SIZE_BYTES = 16 << 10


class _Replay:
    """The loop every policy shares; a policy says how to look up, fill and drop.

    Revisions are the trace's transaction ids where it gives them: a store
    of the revision the cache was last told of is a plain fill (a prefetch,
    as RelStorage's ``StorageCache.prefetch`` and ZEO's ``prefetch`` fill
    only what they lack), a store of another is a new revision.  Where the
    trace gives none (SPC, a miss never filled), each write is a new
    revision numbered here.
    """

    def __init__(self) -> None:
        self.current: dict[int, int] = {}  # key -> the revision last seen
        self.next_tid = 2  # numbered revisions, for traces without tids

    def hit(self, key: int, tid: int) -> bool:
        raise NotImplementedError

    def fill(self, key: int, size_bytes: int, tid: int) -> None:
        raise NotImplementedError

    def write(self, key: int, size_bytes: int, tid: int, old: int | None) -> None:
        """A new revision *tid* of *key*, whose revision before was *old* (None: unknown)."""
        raise NotImplementedError

    def drop(self, key: int, tid: int) -> None:
        raise NotImplementedError

    def hits(self) -> int:
        raise NotImplementedError

    def run(self, accesses: Sequence[Access], clock: Callable[[], float]) -> Outcome:
        loads = 0
        current = self.current
        started = clock()
        for op, key, size, tid in accesses:
            if op == READ:
                loads += 1
                tid = current[key] = tid or current.get(key, 1)
                if not self.hit(key, tid):
                    self.fill(key, size, tid)
            elif op == INVALIDATE:
                current.pop(key, None)
                self.drop(key, tid)
            elif tid and tid == current.get(key):
                self.fill(key, size, tid)
            else:
                if not tid:
                    tid, self.next_tid = self.next_tid, self.next_tid + 1
                old, current[key] = current.get(key), tid
                self.write(key, size, tid, old)
        return Outcome(loads, self.hits(), clock() - started)


class _ZEO(_Replay):
    def __init__(self, size_bytes: int) -> None:
        from ZEO.cache import ZEC_HEADER_SIZE
        from ZEO.scripts.cache_simul import CircularCacheSimulation

        super().__init__()
        self.sim = CircularCacheSimulation(size_bytes, 0.8)  # 0.8: cache_simul's default
        # ZEO's ClientCache.store skips an object too big for the whole cache.
        self.largest = size_bytes - ZEC_HEADER_SIZE - self.sim.overhead - 1

    def hit(self, key: int, tid: int) -> bool:
        before = self.sim.total_hits
        self.sim.load(key.to_bytes(8, "big"), 0, tid.to_bytes(8, "big"), 0x20)
        return bool(self.sim.total_hits > before)

    def fill(self, key: int, size_bytes: int, tid: int) -> None:
        oid = key.to_bytes(8, "big")
        # cache_simul refills an evicted object itself on its next miss;
        # ZEO's store of the current revision it holds changes nothing.
        if oid not in self.sim.current and 0 < size_bytes <= self.largest:
            self.sim.write(oid, size_bytes, tid.to_bytes(8, "big"), bytes(8))

    def write(self, key: int, size_bytes: int, tid: int, old: int | None) -> None:
        oid = key.to_bytes(8, "big")
        revision = tid.to_bytes(8, "big")
        self.sim.inval(oid, revision)  # the current revision becomes non-current
        if 0 < size_bytes <= self.largest:
            self.sim.write(oid, size_bytes, revision, bytes(8))

    def drop(self, key: int, tid: int) -> None:
        self.sim.inval(key.to_bytes(8, "big"), bytes(8))

    def hits(self) -> int:
        return int(self.sim.total_hits)


class _RelStorage(_Replay):
    """RelStorage's LocalClient driven as its ``StorageCache`` drives it.

    A load is ``client[(oid, tid)]``; a miss and a prefetch store
    ``client[(oid, tid)] = ...`` (a plain set); a commit adds the new
    revision and the older ones go (``delitems``, as the poll's vacuum does),
    so the object keeps its place and frequency in the generations.
    """

    def __init__(self, size_bytes: int) -> None:
        # Looked up at each replay, so that a test can put a stub in its place.
        from relstorage.cache import local_client
        from relstorage.options import Options

        super().__init__()
        options = Options(cache_local_mb=size_bytes / 1e6, cache_local_compression="none")
        self.client = local_client.LocalClient(options)
        self.value_limit = int(options.cache_local_object_max)
        self.states: dict[int, bytes] = {}

    def _state(self, size_bytes: int) -> bytes:
        # RelStorage caches no state of its value limit or more: one of that
        # length stands for any larger, without making gigabytes of it.
        size_bytes = min(size_bytes, self.value_limit)
        state = self.states.get(size_bytes)
        if state is None:
            state = self.states[size_bytes] = b"s" * size_bytes
        return state

    def hit(self, key: int, tid: int) -> bool:
        return self.client.get((key, tid)) is not None

    def fill(self, key: int, size_bytes: int, tid: int) -> None:
        # A plain set, as a miss and a prefetch store: of a revision held, it
        # only makes the entry most recently used.
        self.client[(key, tid)] = (self._state(size_bytes), tid)

    def write(self, key: int, size_bytes: int, tid: int, old: int | None) -> None:
        # peek: a look that counts no hit and moves nothing.
        held = old is not None and self.client.get((key, old), peek=True) is not None
        self.client[(key, tid)] = (self._state(size_bytes), tid)
        if held:
            # The vacuum's delitems: revisions up to *old* go (of an entry
            # holding two; one holding only the new one would lose it).
            self.client.delitems({key: old})

    def drop(self, key: int, tid: int) -> None:
        self.client.invalidate_all([key])

    def hits(self) -> int:
        return int(self.client.stats()["hits"])


class _LRU(_Replay):
    def __init__(self, size_bytes: int) -> None:
        from cachetools import LRUCache

        super().__init__()
        self.cache: Any = LRUCache(maxsize=size_bytes, getsizeof=lambda size: max(size, 1))
        self.counted = 0

    def hit(self, key: int, tid: int) -> bool:
        found = self.cache.get(key) is not None
        self.counted += found
        return found

    def fill(self, key: int, size_bytes: int, tid: int) -> None:
        if size_bytes <= self.cache.maxsize:  # cachetools refuses a bigger one
            self.cache[key] = size_bytes

    def write(self, key: int, size_bytes: int, tid: int, old: int | None) -> None:
        self.fill(key, size_bytes, tid)

    def drop(self, key: int, tid: int) -> None:
        self.cache.pop(key, None)

    def hits(self) -> int:
        return self.counted


@dataclass(frozen=True)
class Policy:
    """A cache to replay traces through: its name, the library it comes from."""

    name: str
    package: str  # the distribution whose version is recorded with the result
    description: str
    make: Callable[[int], _Replay]

    def replay(
        self,
        accesses: Sequence[Access],
        size_bytes: int,
        clock: Callable[[], float] = time.perf_counter,
    ) -> Outcome:
        """*accesses* through a new, empty cache of *size_bytes*."""
        return self.make(size_bytes).run(accesses, clock)

    def version(self) -> str:
        try:
            return version(self.package)
        except PackageNotFoundError:
            return "unknown"


POLICIES = {
    policy.name: policy
    for policy in (
        Policy("zeo", "ZEO", "ZEO's client cache (cache_simul's CircularCacheSimulation)", _ZEO),
        Policy(
            "relstorage",
            "RelStorage",
            "RelStorage's local cache (LocalClient: eden/probation/protected)",
            _RelStorage,
        ),
        Policy("lru", "cachetools", "byte-bounded LRU (cachetools.LRUCache)", _LRU),
    )
}

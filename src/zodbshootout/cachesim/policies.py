"""The caches a trace is replayed through, each the library's own code.

Every policy replays the same :class:`~zodbshootout.cachesim.records.Access`
records the same way: a read is a load, a hit when the cache holds the
object, and on a miss the object is put in the cache (as a client does
with what the server sent); a write puts a new revision in place of the
old; an invalidation drops the object.

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
    """The loop every policy shares; a policy says how to look up, fill and drop."""

    def hit(self, key: int) -> bool:
        raise NotImplementedError

    def fill(self, key: int, size_bytes: int) -> None:
        raise NotImplementedError

    def write(self, key: int, size_bytes: int) -> None:
        raise NotImplementedError

    def drop(self, key: int) -> None:
        raise NotImplementedError

    def hits(self) -> int:
        raise NotImplementedError

    def run(self, accesses: Sequence[Access], clock: Callable[[], float]) -> Outcome:
        loads = 0
        started = clock()
        for op, key, size in accesses:
            if op == READ:
                loads += 1
                if not self.hit(key):
                    self.fill(key, size)
            elif op == INVALIDATE:
                self.drop(key)
            else:
                self.write(key, size)
        return Outcome(loads, self.hits(), clock() - started)


class _ZEO(_Replay):
    def __init__(self, size_bytes: int) -> None:
        from ZEO.cache import ZEC_HEADER_SIZE
        from ZEO.scripts.cache_simul import CircularCacheSimulation

        self.sim = CircularCacheSimulation(size_bytes, 0.8)  # 0.8: cache_simul's default
        # ZEO's ClientCache.store skips an object too big for the whole cache.
        self.largest = size_bytes - ZEC_HEADER_SIZE - self.sim.overhead - 1
        self.tids: dict[bytes, bytes] = {}
        self.next_tid = 2

    def _tid(self, oid: bytes) -> bytes:
        return self.tids.get(oid, (1).to_bytes(8, "big"))

    def hit(self, key: int) -> bool:
        before = self.sim.total_hits
        self.sim.load(key.to_bytes(8, "big"), 0, self._tid(key.to_bytes(8, "big")), 0x20)
        return bool(self.sim.total_hits > before)

    def fill(self, key: int, size_bytes: int) -> None:
        oid = key.to_bytes(8, "big")
        # cache_simul refills an evicted object itself on its next miss.
        if oid not in self.sim.current and 0 < size_bytes <= self.largest:
            self.sim.write(oid, size_bytes, self._tid(oid), bytes(8))

    def write(self, key: int, size_bytes: int) -> None:
        oid = key.to_bytes(8, "big")
        tid = self.next_tid.to_bytes(8, "big")
        self.next_tid += 1
        self.sim.inval(oid, tid)  # the current revision becomes non-current
        self.tids[oid] = tid
        if 0 < size_bytes <= self.largest:
            self.sim.write(oid, size_bytes, tid, bytes(8))

    def drop(self, key: int) -> None:
        self.sim.inval(key.to_bytes(8, "big"), bytes(8))

    def hits(self) -> int:
        return int(self.sim.total_hits)


class _RelStorage(_Replay):
    def __init__(self, size_bytes: int) -> None:
        # Looked up at each replay, so that a test can put a stub in its place.
        from relstorage.cache import local_client
        from relstorage.options import Options

        options = Options(cache_local_mb=size_bytes / 1e6, cache_local_compression="none")
        self.client = local_client.LocalClient(options)
        self.tids: dict[int, int] = {}
        self.next_tid = 2
        self.states: dict[int, bytes] = {}

    def _state(self, size_bytes: int) -> bytes:
        state = self.states.get(size_bytes)
        if state is None:
            state = self.states[size_bytes] = b"s" * size_bytes
        return state

    def hit(self, key: int) -> bool:
        return self.client.get((key, self.tids.get(key, 1))) is not None

    def fill(self, key: int, size_bytes: int) -> None:
        tid = self.tids.get(key, 1)
        self.client[(key, tid)] = (self._state(size_bytes), tid)

    def write(self, key: int, size_bytes: int) -> None:
        tid = self.tids[key] = self.next_tid
        self.next_tid += 1
        self.client.invalidate_all([key])
        self.client[(key, tid)] = (self._state(size_bytes), tid)

    def drop(self, key: int) -> None:
        self.client.invalidate_all([key])

    def hits(self) -> int:
        return int(self.client.stats()["hits"])


class _LRU(_Replay):
    def __init__(self, size_bytes: int) -> None:
        from cachetools import LRUCache

        self.cache: Any = LRUCache(maxsize=size_bytes, getsizeof=lambda size: max(size, 1))
        self.counted = 0

    def hit(self, key: int) -> bool:
        found = self.cache.get(key) is not None
        self.counted += found
        return found

    def fill(self, key: int, size_bytes: int) -> None:
        if size_bytes <= self.cache.maxsize:  # cachetools refuses a bigger one
            self.cache[key] = size_bytes

    write = fill

    def drop(self, key: int) -> None:
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

"""cachesim's policies on traces with known answers: the libraries' own caches, side by side.

A loop over K keys is the textbook case: an LRU smaller than the loop
evicts each key just before it is read again (0 % hits), one that holds
the loop misses only the first pass.  RelStorage's cache admits by
frequency, so a one-time scan over many keys does not evict its hot set,
where an LRU loses it.
"""

from __future__ import annotations

import tracemalloc

import pytest

from zodbshootout.cachesim.policies import POLICIES
from zodbshootout.cachesim.records import READ, WRITE, Access

K = 200
SIZE = 1000  # bytes per object
PASSES = 10


def _loop(keys: int = K, passes: int = PASSES) -> list[Access]:
    return [Access(READ, key, SIZE) for _ in range(passes) for key in range(keys)]


def test_lru_shows_the_textbook_cliff_on_a_loop():
    lru = POLICIES["lru"]
    below = lru.replay(_loop(), K * SIZE - SIZE)  # one object short of the loop
    above = lru.replay(_loop(), K * SIZE)
    assert below.loads == above.loads == K * PASSES
    assert below.hits == 0
    # Every pass but the first hits everything.
    assert above.hits == K * (PASSES - 1)


def test_zeo_has_the_cliff_too_once_its_record_overhead_fits():
    zeo = POLICIES["zeo"]
    # ZEO's records take 43 bytes more than their data, in one circular file.
    assert zeo.replay(_loop(), K * SIZE // 2).hits == 0
    assert zeo.replay(_loop(), 2 * K * SIZE).hits == K * (PASSES - 1)


def test_relstorage_keeps_part_of_a_loop_that_lru_loses_entirely():
    # Frequency admission: below the loop's size RelStorage still hits the
    # objects its protected generation kept, where LRU hits nothing.
    size = K * SIZE // 2
    relstorage = POLICIES["relstorage"].replay(_loop(), size)
    lru = POLICIES["lru"].replay(_loop(), size)
    assert lru.hits == 0
    assert relstorage.hits > 0.2 * relstorage.loads
    # Above it, both miss the first pass only.
    assert POLICIES["relstorage"].replay(_loop(), 2 * K * SIZE).hits == K * (PASSES - 1)


def _hot_set_then_scan() -> tuple[list[Access], list[Access]]:
    hot = [Access(READ, key, SIZE) for _ in range(50) for key in range(30)]
    scan = [Access(READ, 1000 + key, SIZE) for key in range(2000)]
    again = [Access(READ, key, SIZE) for key in range(30)]
    return hot + scan, hot + scan + again


def test_a_scan_does_not_evict_relstorages_hot_set_but_evicts_lrus():
    before, after = _hot_set_then_scan()
    size = 60 * SIZE  # twice the hot set, far less than the scan

    def hot_hits_after_the_scan(policy: str) -> int:
        return (
            POLICIES[policy].replay(after, size).hits - POLICIES[policy].replay(before, size).hits
        )

    assert hot_hits_after_the_scan("relstorage") == 30
    assert hot_hits_after_the_scan("lru") == 0


def test_the_relstorage_column_is_relstorages_own_cache(monkeypatch):
    """With LocalClient replaced by a stub, the relstorage column is the stub's."""
    from relstorage.cache import local_client

    created = []

    class Stub:
        """Stores nothing: every load misses."""

        def __init__(self, options, prefix=None):
            created.append(options.cache_local_mb)

        def get(self, key, peek=False):
            return None

        def __setitem__(self, key, value):
            pass

        def invalidate_all(self, oids):
            pass

        def delitems(self, oids_tids):
            pass

        def stats(self):
            return {"hits": 0}

    _before, after = _hot_set_then_scan()
    real = POLICIES["relstorage"].replay(after, 60 * SIZE)
    monkeypatch.setattr(local_client, "LocalClient", Stub)
    stubbed = POLICIES["relstorage"].replay(after, 60 * SIZE)
    assert created == [60 * SIZE / 1e6]  # RelStorage's MB are 1,000,000 bytes
    assert stubbed.hits == 0
    assert real.hits == len(after) - 30 - 2000  # the hot set survived the scan


def test_a_write_replaces_the_cached_revision_in_every_policy():
    accesses = [
        Access(READ, 1, SIZE),  # miss, filled
        Access(READ, 1, SIZE),  # hit
        Access(WRITE, 1, SIZE),  # a new revision, put in the cache by the writer
        Access(READ, 1, SIZE),  # hit on the new revision
    ]
    for name, policy in POLICIES.items():
        outcome = policy.replay(accesses, 1 << 20)
        assert (outcome.loads, outcome.hits) == (3, 2), name


@pytest.mark.parametrize("size", [64 << 10, 1 << 31], ids=["64KiB", "2GiB"])
@pytest.mark.parametrize("name", sorted(POLICIES))
def test_an_object_larger_than_the_cache_is_not_cached(name, size):
    """Nor made: the largest size an SPC line may give costs no memory (tracemalloc says)."""
    accesses = [Access(READ, 1, size)] * 3
    tracemalloc.start()
    try:
        outcome = POLICIES[name].replay(accesses, 16 << 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (outcome.loads, outcome.hits) == (3, 0)
    assert peak < 8 << 20


def test_each_policy_names_its_library_and_version():
    assert {p.package for p in POLICIES.values()} == {"ZEO", "RelStorage", "cachetools"}
    for policy in POLICIES.values():
        assert policy.version()[0].isdigit(), policy

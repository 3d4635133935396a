"""The relstorage column keeps a trace's revisions: RelStorage's own cache, driven by hand, agrees.

A trace written from a ZEO cache or RelStorage's ``ZEOTracer`` carries each
object's transaction id.  Prefetching stores objects again at the revision
the cache may already hold; replayed as new revisions, those stores wiped
the objects' frequency history from RelStorage's generations and the
simulated hit rate fell 2-3 times below what ``LocalClient`` gets.
"""

from __future__ import annotations

import random

import pytest

from zodbshootout.cachesim.policies import POLICIES
from zodbshootout.cachesim.records import RECORD, marker_record, read_trace

pytest.importorskip("relstorage", reason="RelStorage is not installed")

OBJECTS = 2000
SIZE = 150  # bytes per object: about 300 KB of data in all, more with RelStorage's overhead
READS = 20_000
FIRST_TID = 0x03E5_0000_0000_0000  # a tid of the 2020s
SIZES = (64 << 10, 128 << 10, 256 << 10, 512 << 10, 4 << 20)


def _events(seed: int = 35) -> list[tuple[str, int, int]]:
    """(what, oid, tid): loads drawn with a skew, prefetches of the same keys, a few commits."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) ** 0.9 for rank in range(OBJECTS)]
    tids = dict.fromkeys(range(OBJECTS), FIRST_TID)
    next_tid = FIRST_TID + 1
    events = []
    for number in range(READS):
        if number % 100 == 0:  # a prefetch: fills of what the cache may already hold
            for oid in rng.choices(range(OBJECTS), weights, k=40):
                events.append(("prefetch", oid, tids[oid]))
        if number % 250 == 0:  # a commit: a new revision
            oid = rng.choices(range(OBJECTS), weights)[0]
            tids[oid] = next_tid
            next_tid += 1
            events.append(("commit", oid, tids[oid]))
        oid = rng.choices(range(OBJECTS), weights)[0]
        events.append(("load", oid, tids[oid]))
    return events


def _record(code: int, oid: int, tid: int = 0, dlen: int = 0) -> bytes:
    return RECORD.pack(1700000000, (dlen << 8) | code, 8, tid.to_bytes(8, "big"), bytes(8)) + (
        oid.to_bytes(8, "big")
    )


def _trace(events: list[tuple[str, int, int]], rng: random.Random) -> bytes:
    """The events as a ZEO trace: a load is a hit or a miss and its fill, at random."""
    parts = [marker_record(1700000000, kind="relstorage")]
    for what, oid, tid in events:
        if what != "load":
            parts.append(_record(0x52, oid, tid, SIZE))
        elif rng.random() < 0.5:
            parts.append(_record(0x22, oid, tid, SIZE))
        else:
            parts.append(_record(0x20, oid) + _record(0x52, oid, tid, SIZE))
    return b"".join(parts)


def _local_client_hit_rate(events: list[tuple[str, int, int]], size_bytes: int) -> float:
    """RelStorage's LocalClient driven as its StorageCache drives it, with the trace's tids."""
    from relstorage.cache.local_client import LocalClient
    from relstorage.options import Options

    client = LocalClient(Options(cache_local_mb=size_bytes / 1e6, cache_local_compression="none"))
    state = b"s" * SIZE
    loads = hits = 0
    for what, oid, tid in events:
        if what == "load":  # StorageCache.load: the cache, else the database and a store
            loads += 1
            if client[(oid, tid)] is not None:
                hits += 1
                continue
        # A miss's fill, a prefetch's (StorageCache.prefetch), a commit's
        # (after_tpc_finish: set_all_for_tid): each a store of (oid, tid).
        client[(oid, tid)] = (state, tid)
    return hits / loads


def test_the_relstorage_column_agrees_with_local_client_below_the_working_set(tmp_path):
    events = _events()
    path = tmp_path / "prefetching.trace"
    path.write_bytes(_trace(events, random.Random(7)))
    accesses = read_trace(str(path)).accesses
    for size in SIZES:
        expected = _local_client_hit_rate(events, size)
        outcome = POLICIES["relstorage"].replay(accesses, size)
        assert outcome.loads == READS
        simulated = outcome.hits / outcome.loads
        assert simulated == pytest.approx(expected, abs=0.01), f"{size >> 10} KiB"
    # The sizes span the cliff: the smallest hold a fraction, the largest all but first loads.
    assert _local_client_hit_rate(events, SIZES[0]) < 0.7
    assert _local_client_hit_rate(events, SIZES[-1]) > 0.9

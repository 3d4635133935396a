"""The trace analyzer's figures, each against a trace whose answer is known by construction.

Popularity against loads drawn with fixed counts (and against a recorded
workload that drew its oids from a zipf law of a known exponent), the
working set, inter-arrival times and conflict candidates against records
placed at known times, ZEO cache traces against records of known kinds and
against a real ZEO ClientCache's own trace of calls counted here.
"""

from __future__ import annotations

import collections
import random
import struct

import pytest
from test_recording_stats import run_main

from zodbshootout.recording.analysis import Feed
from zodbshootout.recording.format import FORMAT_VERSION, Header, Op, pack_header, pack_record
from zodbshootout.recording.reader import open_trace
from zodbshootout.recording.stats import trace_stats
from zodbshootout.results.trace_analysis import TraceAnalysis, top_share, zipf_fit

MS = 1_000_000
BASE_WALL = 1_700_000_000 * 10**9


def oid(n):
    return n.to_bytes(8, "big")


def write(path, records, pid=7):
    header = Header(FORMAT_VERSION, 0, pid, 0, 0, BASE_WALL)
    path.write_bytes(pack_header(header) + b"".join(records))
    return open_trace(str(path))


def analyzed(traces, window_ns=1_000_000_000):
    analysis = TraceAnalysis(window_ns)
    stats = trace_stats(traces, Feed(analysis, traces))
    return stats, analysis.summary()


def rec(time_ns, op, connection, transaction, n=0, size=0):
    return pack_record(time_ns, op, 0, connection, transaction, oid(n), oid(0), size)


# --- popularity ------------------------------------------------------------------------


def zipf_counts(oids, exponent, scale):
    return [max(1, round(scale * rank**-exponent)) for rank in range(1, oids + 1)]


@pytest.mark.parametrize(("exponent", "scale"), [(0.0, 20), (0.8, 2000), (1.2, 2000)])
def test_popularity_of_loads_with_counts_known_by_construction(tmp_path, exponent, scale):
    counts = zipf_counts(500, exponent, scale)
    order = [n for n, count in enumerate(counts) for _ in range(count)]
    random.Random(3).shuffle(order)  # the trace's order says nothing of the ranks
    records = [rec(i * 1000, Op.LOAD, 1, 1, n + 100, size=64) for i, n in enumerate(order)]
    _, summary = analyzed([write(tmp_path / "a.zodbtrace", records)])
    assert summary.loads == sum(counts) == len(order)
    assert summary.loaded_oids == 500
    # The top 1 % are the first 5 ranks, the top 10 % the first 50, by construction.
    assert summary.top1_share == pytest.approx(sum(counts[:5]) / sum(counts))
    assert summary.top10_share == pytest.approx(sum(counts[:50]) / sum(counts))
    assert summary.zipf.exponent == pytest.approx(exponent, abs=0.03)
    assert summary.zipf.r_squared > 0.99 or exponent == 0.0


def test_the_zipf_exponent_of_a_recorded_workload_that_drew_its_oids_from_a_zipf_law(tmp_path):
    from ZODB.MappingStorage import MappingStorage
    from ZODB.utils import z64

    from zodbshootout.recording import record

    storage = record(MappingStorage(), str(tmp_path / "app"))
    objects, exponent = 400, 1.1
    connection = storage.new_instance()
    connection.poll_invalidations()
    # Real records to load: one transaction storing them all.
    import transaction as txn_module

    t = txn_module.Transaction()
    connection.tpc_begin(t)
    oids = [connection.new_oid() for _ in range(objects)]
    for n, o in enumerate(oids):
        connection.store(o, z64, b"x" * (10 + n), "", t)
    connection.tpc_vote(t)
    connection.tpc_finish(t)
    connection.poll_invalidations()  # a new transaction sees the records
    rng = random.Random(5)
    weights = [rank**-exponent for rank in range(1, objects + 1)]
    drawn = rng.choices(range(objects), weights, k=40_000)
    for n in drawn:
        connection.load(oids[n])
    connection.release()
    storage.close()
    traces = [open_trace(name) for name in storage.recording.files_written]
    stats, summary = analyzed(traces)
    assert stats.calls[Op.LOAD] == summary.loads == 40_000
    assert summary.zipf.exponent == pytest.approx(exponent, abs=0.1)
    assert summary.zipf.r_squared > 0.97
    # The top 10 % (40 oids) as counted from the draws themselves.
    drawn_counts = sorted(collections.Counter(drawn).values(), reverse=True)
    assert summary.top10_share == pytest.approx(sum(drawn_counts[:40]) / len(drawn))
    # The sizes: each load of oid n is 10 + n bytes.
    assert summary.load_sizes.max == 10 + max(drawn)
    assert summary.load_sizes.mean == pytest.approx(10 + sum(drawn) / len(drawn))


def test_top_share_and_zipf_fit_at_their_edges():
    assert top_share([], 0.01) is None
    assert top_share([5], 0.01) == 1.0
    assert zipf_fit([100] * 9) is None  # fewer than 10 oids loaded 5 times
    fit = zipf_fit([100] * 50)
    assert fit.exponent == pytest.approx(0.0)


# --- time ------------------------------------------------------------------------------


def test_inter_arrival_counts_transaction_starts_of_all_connections(tmp_path):
    records = []
    # Connection 1 starts a transaction every 30 ms, connection 2 10 ms after each.
    for i in range(20):
        start = i * 30 * MS
        records += [
            rec(start, Op.POLL, 1, i + 1),
            rec(start + 1, Op.LOAD, 1, i + 1, n=1, size=10),
            rec(start + 10 * MS, Op.POLL, 2, i + 1),
            rec(start + 10 * MS, Op.LOAD, 2, i + 1, n=2, size=10),
            rec(start + 10 * MS + 5, Op.LOAD, 2, i + 1, n=3, size=10),  # same transaction
        ]
    records.sort(key=lambda r: struct.unpack_from("<Q", r)[0] & ((1 << 48) - 1))
    _, summary = analyzed([write(tmp_path / "a.zodbtrace", records)])
    gaps = sorted(summary.inter_arrival_ns)
    assert len(gaps) == 39
    assert gaps == [10 * MS - 1] * 20 + [20 * MS + 1] * 19
    assert summary.inter_arrival.p50 == 10 * MS - 1


def test_the_working_set_over_time(tmp_path):
    records = [rec(i * MS, Op.LOAD, 1, 1, n=i % 10, size=1) for i in range(500)]
    records += [rec(2000 * MS + i * MS, Op.LOAD, 1, 1, n=10 + i % 20, size=1) for i in range(500)]
    _, summary = analyzed([write(tmp_path / "a.zodbtrace", records)])
    width = summary.window_ns
    assert 2500 * MS / 64 <= width <= 2500 * MS / 16  # at most 64 windows, merged pairwise
    windows = len(summary.working_set)
    assert summary.working_set[0] == 10
    assert summary.working_set[-1] == 20
    assert max(summary.working_set) == 20
    assert summary.cumulative[-1] == 30
    assert summary.cumulative[0] == 10
    assert windows * width >= 2500 * MS


def test_conflict_candidates_are_other_connections_stores_within_the_window(tmp_path):
    records = [
        rec(0, Op.STORE, 1, 1, n=1, size=5),
        rec(10 * MS, Op.STORE, 2, 1, n=1, size=5),  # oid 1 by another connection: a candidate
        rec(20 * MS, Op.STORE, 1, 2, n=1, size=5),  # and back: a second one
        rec(0, Op.STORE, 1, 1, n=2, size=5),
        rec(5000 * MS, Op.STORE, 2, 2, n=2, size=5),  # 5 s later: not one
        rec(0, Op.STORE, 3, 1, n=3, size=5),
        rec(1 * MS, Op.STORE, 3, 2, n=3, size=5),  # the same connection: not one
    ]
    _, summary = analyzed([write(tmp_path / "a.zodbtrace", records)])
    assert summary.conflict_oids == [(1, 2)]
    assert summary.conflict_stores == 2
    _, wide = analyzed([write(tmp_path / "b.zodbtrace", records)], window_ns=10 * 10**9)
    assert dict(wide.conflict_oids) == {1: 2, 2: 1}


def test_conflicts_across_processes_use_the_files_wall_clock(tmp_path):
    first = write(tmp_path / "a.zodbtrace", [rec(0, Op.STORE, 1, 1, n=9, size=5)], pid=7)
    second = write(tmp_path / "b.zodbtrace", [rec(MS, Op.STORE, 1, 1, n=9, size=5)], pid=8)
    _, summary = analyzed([first, second])
    assert summary.conflict_oids == [(9, 1)]


# --- ZEO / RelStorage cache traces ------------------------------------------------------

ZEO_RECORD = struct.Struct(">iiH8s8s")


def zeo(seconds, code, n=None, dlen=0, tid=1):
    key = b"" if n is None else oid(n)
    return ZEO_RECORD.pack(seconds, (dlen << 8) | code, len(key), oid(tid), oid(0)) + key


def test_a_cache_trace_of_known_records(tmp_path):
    from zodbshootout.cachesim.trace_import import LACKS, import_cache_traces

    data = [zeo(100, 0)]
    data += [zeo(100, 0x20, 1), zeo(100, 0x52, 1, dlen=300)]  # a miss and its fill
    data += [zeo(101, 0x22, 1, dlen=300)] * 4  # four hits
    data += [zeo(102, 0x26, 1)]  # a loadBefore hit: no size, the last known one
    data += [zeo(103, 0x52, 2, dlen=50)]  # a store of its own: a commit or prefetch
    data += [zeo(104, 0x10, 2)]  # an invalidation
    path = tmp_path / "zeo.trace"
    path.write_bytes(b"".join(data))
    analysis = TraceAnalysis(
        transactions=False, connections=False, lacks=LACKS, resolution_ns=10**9
    )
    counts = import_cache_traces([str(path)], analysis, 1 << 20)
    assert counts.kinds == {
        "start": 1,
        "load miss": 1,
        "store filling a miss": 1,
        "load hit": 5,
        "store (commit or prefetch)": 1,
        "invalidation": 1,
    }
    assert (counts.first_seconds, counts.last_seconds, counts.unsized_loads) == (100, 104, 0)
    summary = analysis.summary()
    assert (summary.loads, summary.stores, summary.loaded_oids) == (6, 1, 1)
    assert (summary.load_sizes.mean, summary.store_sizes.max) == (300, 50)
    assert (summary.inter_arrival, summary.conflict_oids) == (None, None)
    assert summary.lacks == LACKS
    # Whole seconds: a window per second (100 to 103; an invalidation is no use).
    assert summary.window_ns == 10**9
    assert (summary.working_set, summary.cumulative) == ([1, 1, 1, 1], [1, 1, 1, 2])


def test_a_real_zeo_client_cache_trace(tmp_path, monkeypatch):
    """ZEO's own ClientCache traces the calls made here; the analyzer counts them back."""
    from ZEO.cache import ClientCache

    from zodbshootout.cachesim.trace_import import import_cache_traces

    monkeypatch.setenv("ZEO_CACHE_TRACE", "1")
    cache = ClientCache(str(tmp_path / "client.zec"), size=1 << 20)
    tid = oid(1)
    for n in range(1, 21):
        cache.store(oid(n), tid, None, b"d" * (n * 10))
    rng = random.Random(2)
    asked = [rng.choice(range(1, 31)) for _ in range(300)]  # 21-30: never stored, misses
    for n in asked:
        cache.load(oid(n))
    cache.close()
    analysis = TraceAnalysis(transactions=False, connections=False)
    counts = import_cache_traces([str(tmp_path / "client.zec.trace")], analysis, 1 << 20)
    hits = sum(1 for n in asked if n <= 20)
    assert counts.kinds["load hit"] == hits
    assert counts.kinds["load miss"] == len(asked) - hits
    assert counts.kinds["store (commit or prefetch)"] == 20
    summary = analysis.summary()
    assert summary.loads == len(asked)
    assert summary.loaded_oids == len(set(asked))
    assert summary.load_sizes.max == 10 * max(n for n in asked if n <= 20)


def test_trace_stats_says_what_a_cache_trace_lacks(tmp_path):
    path = tmp_path / "zeo.trace"
    path.write_bytes(zeo(100, 0) + zeo(100, 0x22, 1, dlen=30))
    code, out, err = run_main("trace-stats", str(path))
    assert (code, err) == (0, "")
    assert "1 ZEO / RelStorage cache trace file(s), 1 records" in out
    assert "this trace lacks:\n  no transaction boundaries" in out
    assert "conflict candidates:" not in out


def test_trace_stats_refuses_a_recording_and_a_cache_trace_together(tmp_path):
    (tmp_path / "zeo.trace").write_bytes(zeo(100, 0))
    write(tmp_path / "a.zodbtrace", [rec(0, Op.LOAD, 1, 1, n=1, size=3)])
    code, out, err = run_main(
        "trace-stats", str(tmp_path / "zeo.trace"), str(tmp_path / "a.zodbtrace")
    )
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert "not both at once" in err


def test_trace_stats_prints_the_analysis_of_a_recording(tmp_path):
    records = [rec(i * MS, Op.LOAD, 1, 1 + i // 10, n=i % 3, size=7) for i in range(100)]
    write(tmp_path / "a.zodbtrace", records)
    code, out, err = run_main("trace-stats", str(tmp_path / "a.zodbtrace"))
    assert (code, err) == (0, "")
    assert "popularity: 100 loads of 3 oids" in out
    assert "inter-arrival of transactions: mean 10 ms" in out
    assert "conflict candidates: 0 oids" in out


def test_a_cache_trace_that_inflates_past_the_limit_is_refused_in_one_line(tmp_path):
    import gzip

    records = zeo(100, 0) + zeo(100, 0x22, 1, dlen=10) * 5000  # 170 KB inflated
    (tmp_path / "bomb.trace.gz").write_bytes(gzip.compress(records))
    code, out, err = run_main(
        "trace-stats", "--max-trace-size", "64KB", str(tmp_path / "bomb.trace.gz")
    )
    assert (code, out, err.count("\n")) == (2, "", 1)
    assert "decompresses to more than 64 KiB" in err


def test_an_empty_trace_is_analyzed_to_nothing_and_its_page_says_so(tmp_path):
    (tmp_path / "start-only.trace").write_bytes(zeo(100, 0))
    page = tmp_path / "page"
    code, out, err = run_main(
        "trace-stats", str(tmp_path / "start-only.trace"), "--html", str(page)
    )
    assert code == 0
    assert "popularity: 0 loads of 0 oids" in out
    assert "warning" not in err  # no empty chart legend, nothing to warn of
    assert (page / "trace.svg").stat().st_size > 1000
    assert "no loads or stores" in (page / "trace.svg").read_text()

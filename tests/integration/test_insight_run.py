"""The insight rows of a real run: etc/local.conf plus an LMDB floor, real processes and servers.

These are the issue's checks: cache hit rates per phase match the truth
tests (hot 100 %, cold ~0 %), bytes per object are within twice payload and
pickle, ``--index-entries 2`` shows index keys/s = 3 × objects/s, the floor
is faster than every ZODB column on add and cold, and the cache-size
simulation prints hit rates per policy that agree with the run's own.
"""

from __future__ import annotations

import io
import json
import re

import pytest
import zodbpickle.pickle

from zodbshootout.workload.objects import BenchmarkObject, make_payload

from conftest import ETC, run_cli

N = 150
# Enough objects that page granularity (SQLite: 4 KiB) is a few bytes per object.
SIZE_N = 1000
SIZE = 128
ZODB_COLUMNS = ("zeo_fs", "sqlite", "zeo_pcache")


def _record_bytes() -> int:
    """Payload plus pickle: what ZODB stores as an object's state (class and state pickles)."""
    obj = BenchmarkObject(make_payload(0, 0, 0, SIZE))
    out = io.BytesIO()
    pickler = zodbpickle.pickle.Pickler(out, 3)
    pickler.dump((type(obj), None))
    pickler.dump(obj.__getstate__())
    return len(out.getvalue())


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory):
    """One run of local.conf and an LMDB floor with --index-entries 2 and --cache-trace."""
    tmp = tmp_path_factory.mktemp("insight")
    config = tmp / "local_lmdb.conf"
    config.write_text(
        (ETC / "local.conf").read_text() + "\n<rawkv lmdb>\n  backend lmdb\n</rawkv>\n"
    )
    traces = tmp / "traces"
    done = run_cli(
        str(config), "-n", str(N), "-c", "2", "-r", "1", "-q", "--format", "json",
        "--index-entries", "2", "--cache-trace", str(traces),
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout), traces


def _insight(document, kind, phase):
    (block,) = document["blocks"]
    (row,) = [r for r in block["insight"] if r["kind"] == kind and r["phase"] == phase]
    return row["cells"]


def _rates(document, phase):
    (block,) = document["blocks"]
    (row,) = [r for r in block["rows"] if r["phase"] == phase]
    return {name: cell["rate"] for name, cell in row["cells"].items()}


@pytest.mark.zeo
@pytest.mark.slow
def test_cache_hit_rates_follow_the_phases(traced_run):
    document, _traces = traced_run
    hot = _insight(document, "cache_hit_rate", "hot")
    cold = _insight(document, "cache_hit_rate", "cold")
    warm = _insight(document, "cache_hit_rate", "warm")
    for name in ZODB_COLUMNS:
        assert hot[name]["value"] == 1.0
        assert hot[name]["misses"] == 0
        # Only objects read twice in the transaction (the root: Connection.root, then its state).
        assert cold[name]["hits"] <= 2 * 2, (name, cold[name])
        assert cold[name]["value"] < 0.02
    # The persistent client cache file answers the fresh reader's warm reads.
    assert warm["zeo_pcache"]["value"] > 0.99
    assert warm["zeo_fs"]["hits"] <= 2 * 2  # a new process: only the root, again
    # The floor has no client cache: a footnote, not a number.
    assert hot["lmdb"]["value"] is None
    assert "no client cache" in document["footnotes"][hot["lmdb"]["footnote"] - 1]


@pytest.mark.zeo
@pytest.mark.slow
def test_bytes_per_object_are_within_twice_payload_and_pickle(tmp_path):
    # Without index entries: their BTree buckets would count too.
    config = tmp_path / "local_lmdb.conf"
    config.write_text(
        (ETC / "local.conf").read_text() + "\n<rawkv lmdb>\n  backend lmdb\n</rawkv>\n"
    )
    done = run_cli(str(config), "-n", str(SIZE_N), "-r", "1", "-q", "--format", "json", "add")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    added = _insight(json.loads(done.stdout), "bytes_per_object", "add")
    for name in (*ZODB_COLUMNS, "lmdb"):
        assert SIZE <= added[name]["value"] <= 2 * _record_bytes(), (name, added[name])
        assert added[name]["objects"] == 2 * SIZE_N


@pytest.mark.zeo
@pytest.mark.slow
def test_index_keys_per_second_are_three_times_objects_per_second(traced_run):
    document, _traces = traced_run
    for phase in ("add", "update"):
        keys = _insight(document, "index_keys_per_second", phase)
        rates = _rates(document, phase)
        for name in ZODB_COLUMNS:
            assert keys[name]["value"] == pytest.approx(3 * rates[name], rel=1e-6)
        assert keys["lmdb"]["value"] is None


@pytest.mark.zeo
@pytest.mark.slow
def test_the_floor_reads_faster_than_every_zodb_column_and_writes_faster_than_most(traced_run):
    document, _traces = traced_run
    rates = _rates(document, "cold")
    assert all(rates["lmdb"] > rates[name] for name in ZODB_COLUMNS), rates
    # Writes: each side fsyncs its commits, so on a busy disk one ZODB column
    # may catch up with the floor; most don't.
    rates = _rates(document, "add")
    assert sum(rates["lmdb"] > rates[name] for name in ZODB_COLUMNS) >= 2, rates
    # The phases a raw store has no meaning for are footnotes.
    warm = document["blocks"][0]["rows"][2]
    assert warm["phase"] == "warm"
    assert warm["cells"]["lmdb"]["rate"] is None
    assert document["footnotes"][warm["cells"]["lmdb"]["footnote"] - 1].startswith(
        "no warm for a raw key-value store"
    )


@pytest.mark.zeo
@pytest.mark.slow
def test_the_traces_replay_through_all_three_policies(traced_run):
    _document, traces = traced_run
    names = sorted(path.name for path in traces.iterdir())
    # One trace per ZODB database with a client cache, stage and worker.
    for name in ZODB_COLUMNS:
        for stage in ("write", "read"):
            for worker in (0, 1):
                assert f"{name}-n{N}-c2-r1-{stage}-w{worker}.trace" in names
    read_trace = str(traces / f"zeo_fs-n{N}-c2-r1-read-w0.trace")
    done = run_cli(
        "cachesim", read_trace, "--policy", "zeo,relstorage,lru", "--sizes", "16KB,64KB,4MB",
        "--format", "csv",
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    rows = [line.split(",") for line in done.stdout.splitlines()[1:]]
    assert [row[1] for row in rows] == ["actual", "simulated", "simulated", "simulated"]
    for column in (4, 5, 6):  # zeo, relstorage, lru
        rates = [float(row[column]) for row in rows[1:]]
        assert rates == sorted(rates)
        assert rates[0] < rates[-1]


@pytest.mark.zeo
@pytest.mark.slow
def test_the_actual_row_agrees_with_the_runs_hit_rate_row_per_phase(traced_run):
    """The traced cache's hits, counted per phase, are the run's own hit-rate row (±1 point)."""
    document, traces = traced_run
    done = run_cli("cachesim", str(traces), "--sizes", "1MB", "--format", "json")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    actual = {
        row["trace"]: row for row in json.loads(done.stdout)["rows"] if row["source"] == "actual"
    }
    compared = 0
    for name, kind in (("zeo_fs", "zeo"), ("sqlite", "relstorage"), ("zeo_pcache", "zeo")):
        row = actual[f"{name}-n{N}-c2 read"]
        assert row["kind"] == kind
        assert row["cache_size_bytes"] > 0
        for phase in ("warm", "cold", "prefetch", "hot"):
            traced = row["phases"][phase]["hit_rate"]
            counted = _insight(document, "cache_hit_rate", phase)[name]["value"]
            assert abs(traced - counted) <= 0.01, (name, phase, traced, counted)
            compared += 1
    assert compared == 12


@pytest.mark.zeo
@pytest.mark.slow
def test_cachesim_of_a_run_directory_groups_by_database_and_stage(traced_run):
    """docs/insight.rst's command: one group per database and stage, no mixed total."""
    _document, traces = traced_run
    done = run_cli(
        "cachesim", str(traces), "--policy", "zeo,relstorage,lru",
        "--sizes", "64KB,256KB,1MB,4MB",
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    table = done.stdout.split("\n\n")[0].splitlines()[2:]
    groups = [f"{name}-n{N}-c2 {stage}" for name in ZODB_COLUMNS for stage in ("read", "write")]
    assert sorted({line.split("  ")[0].strip() for line in table}) == sorted(groups)
    assert len(table) == len(groups) * 5  # the actual row and four sizes each
    assert not any(line.startswith("all ") for line in table)
    actual = [line for line in table if " actual " in line]
    assert len(actual) == len(groups)
    # The traced caches' own sizes: ZEO's in MiB, RelStorage's cache-local-mb in MB.
    assert all(re.search(r" actual [\d.]+ MiB ", line) for line in actual), actual

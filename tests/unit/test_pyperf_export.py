"""The pyperf export loads in the real pyperf, one benchmark per measured cell."""

import json

import pytest
from sample_run import sample_result

from zodbshootout.results.pyperf_export import dumps_pyperf

pyperf = pytest.importorskip("pyperf", reason="pyperf is not installed")


def test_real_pyperf_reads_the_suite():
    suite = pyperf.BenchmarkSuite.loads(dumps_pyperf(sample_result()))
    names = suite.get_benchmark_names()
    # Five measured cells; the failed zeo_fs steamin cell is left out.
    assert names == [
        "postgresql add n=1000 c=2",
        "postgresql cold n=1000 c=2",
        "postgresql steamin n=1000 c=2",
        "zeo_fs add n=1000 c=2",
        "zeo_fs cold n=1000 c=2",
    ]
    add = suite.get_benchmark("postgresql add n=1000 c=2")
    assert add.get_unit() == "second"
    assert add.get_nrun() == 3
    # Repetition 1: workers took 0.1 s and 0.101 s for 1000 objects each, 2000 in all.
    assert add.get_values()[0] == pytest.approx(0.1005 / 2000)


def test_values_are_the_inverse_of_the_tables_rates():
    from zodbshootout.results.record import CellKey
    from zodbshootout.results.stats import cell_stats

    result = sample_result()
    document = json.loads(dumps_pyperf(result))
    values = [run["values"][0] for run in document["benchmarks"][1]["runs"]]
    rates = cell_stats(result, CellKey("postgresql", 2, 1000, "cold")).rates
    assert values == pytest.approx([1 / rate for rate in rates])


def test_the_suite_carries_the_runs_metadata_and_its_unit():
    result = sample_result()
    result.metadata["label"] = "my branch"
    result.metadata["environment"] = {
        "zodbshootout": "2.0",
        "cpu_model": "Some CPU",
        "cpu_count": 2,
        "cpu_governor": "unknown",
        "load_average_start": [0.5, 0.4, 0.3],
        "python": {"version": "3.11.7", "implementation": "CPython"},
        "packages": {"ZODB": "6.0", "ZEO": "6.0.0", "RelStorage": None},
        "git": {"commit": "a" * 40, "modified": False},
    }
    result.metadata["databases"] = {
        "postgresql": {
            "database": "postgresql",
            "server_version": "PostgreSQL 15.4 on x86_64",
            "driver": "psycopg2",
            "driver_version": "2.9.9",
        }
    }
    suite = pyperf.BenchmarkSuite.loads(dumps_pyperf(result))
    metadata = suite.get_metadata()
    assert metadata["label"] == "my branch"
    assert metadata["date"] == "2023-11-14T22:13:20+00:00"
    assert metadata["cpu_model_name"] == "Some CPU"
    assert metadata["cpu_governor"] == "unknown"
    assert metadata["load_avg_1min"] == 0.5
    assert metadata["zodb_version"] == "6.0"
    assert metadata["zeo_version"] == "6.0.0"
    assert "relstorage_version" not in metadata  # not installed: left out, not invented
    assert metadata["zodbshootout_git_commit"] == "a" * 40
    assert "1 / the table's objects per second" in metadata["zodbshootout_value"]
    add = suite.get_benchmark("postgresql add n=1000 c=2").get_metadata()
    assert add["database_server"] == "PostgreSQL 15.4 on x86_64"
    assert add["database_driver"] == "psycopg2 2.9.9"

"""The pyperf export loads in the real pyperf, one benchmark per measured cell."""

import json

import pytest
from sample_run import sample_result

from zodbshootout.pyperf_export import dumps_pyperf

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
    # Repetition 1: workers took 0.1 s and 0.101 s for 1000 objects each.
    assert add.get_values()[0] == pytest.approx(0.1005 / 1000)


def test_values_are_the_inverse_of_per_worker_rates():
    document = json.loads(dumps_pyperf(sample_result()))
    values = [run["values"][0] for run in document["benchmarks"][1]["runs"]]
    assert values == pytest.approx([0.05025e-3, 0.05025e-3 * 1.02, 0.05025e-3 * 0.98])

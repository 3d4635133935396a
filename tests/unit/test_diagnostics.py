"""--log and --leaks: parsing the option, configuring logging, counting growth."""

from __future__ import annotations

import logging

import pytest

from zodbshootout.errors import UsageError
from zodbshootout.probes import diagnostics
from zodbshootout.render.notes import leak_notes
from zodbshootout.results.record import Measurement, PhaseTiming, RunResult


@pytest.mark.parametrize("level", ["debug", "INFO", "Warning"])
def test_log_levels_parse_case_insensitively(level):
    assert diagnostics.parse_log_option(level) == diagnostics.LogSetup(level=level.upper())


def test_log_value_that_is_neither_level_nor_file_is_a_usage_error():
    with pytest.raises(UsageError, match=r"--log loud: not a level .* nor a readable"):
        diagnostics.parse_log_option("loud")


def test_log_file_is_checked_before_anything_runs(tmp_path):
    bad = tmp_path / "bad.conf"
    bad.write_text("<logger>\n  name ZEO\n  lvl INFO\n</logger>\n")
    with pytest.raises(UsageError, match=r"--log .*bad.conf: .*lvl"):
        diagnostics.parse_log_option(str(bad))
    empty = tmp_path / "empty.conf"
    empty.write_text("# nothing\n")
    with pytest.raises(UsageError, match="no <eventlog> or <logger> section"):
        diagnostics.parse_log_option(str(empty))


def test_object_growth_reports_the_types_that_grew_and_the_net_total():
    before = diagnostics.Counter({"dict": 10, "list": 5, "tuple": 7})
    after = diagnostics.Counter({"dict": 14, "list": 2, "tuple": 7, "Foo": 3})
    assert diagnostics.object_growth(before, after) == {
        "dict": 4,
        "Foo": 3,
        diagnostics.TOTAL: 4,
    }


def test_object_counts_see_new_objects():
    class Marker:
        pass

    before = diagnostics.object_counts()
    kept = [Marker() for _ in range(50)]
    after = diagnostics.object_counts()
    growth = diagnostics.object_growth(before, after)
    name = next(k for k in growth if k.endswith("Marker"))
    assert growth[name] == 50
    assert len(kept) == 50


def _growth_result(growths):
    result = RunResult(["sqlite"], [10], [2], ["add", "cold"], 1)
    for phase, worker, growth in growths:
        timing = PhaseTiming(phase, worker, 0.1, 10, 0, 0, None, object_growth=growth)
        result.measurements.append(Measurement("sqlite", 2, 10, 1, timing))
    return result


def test_leak_notes_average_per_worker_and_skip_phases_that_did_not_grow():
    result = _growth_result(
        [
            ("add", 0, {"dict": 30, "BenchmarkObject": 10, diagnostics.TOTAL: 40}),
            ("add", 1, {"dict": 10, "BenchmarkObject": 10, diagnostics.TOTAL: 20}),
            ("cold", 0, {diagnostics.TOTAL: -5}),
            ("cold", 1, {diagnostics.TOTAL: 0}),
        ]
    )
    assert leak_notes(result) == [
        "leaks: sqlite add (n=10, c=2): tracked objects grew by 30 per worker and "
        "repetition (dict +20, BenchmarkObject +10)"
    ]


def test_no_leak_notes_without_leak_counting():
    assert leak_notes(_growth_result([("add", 0, None), ("add", 1, None)])) == []


def test_unconfigured_logging_is_left_alone():
    handlers = list(logging.getLogger().handlers)
    diagnostics.configure_logging(None)
    assert logging.getLogger().handlers == handlers

"""A mix run's typed records: read from what a result file holds, old records included."""

import copy
import json
import pathlib

import pytest

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

from zodbshootout.errors import UsageError
from zodbshootout.results import file as resultfile
from zodbshootout.results.mix import Interval, MixRecord, MixRun
from zodbshootout.results.mix_stats import integrity, total_summary

BASE = pathlib.Path(__file__).parent / "golden" / "mix" / "base.json"


def _document():
    return json.loads(BASE.read_text(encoding="utf-8"))


def test_a_saved_record_reads_as_typed_records_with_the_same_figures():
    document = _document()
    run = MixRun.of(resultfile.loads(json.dumps(document)))
    data = document["mix"][0]
    record = run.records[0]
    assert record.database == data["database"] == "zeo_fs"
    assert record.operations["read"].count == data["operations"]["read"]["count"]
    assert record.intervals[0] == Interval(**data["intervals"][0])
    assert record.changes_found == data["changes_found"]
    assert run.workload == "ycsb-b"
    assert run.seed == 1
    assert run.record("sqlite") is run.records[1]
    assert run.record("elsewhere") is None
    # The whole run's throughput is the operations' counts over the seconds.
    count = sum(op["count"] for op in data["operations"].values())
    assert total_summary(record).per_second == pytest.approx(count / data["seconds"])


def test_a_record_saved_before_the_check_after_the_run_reads_with_defaults():
    data = copy.deepcopy(_document()["mix"][0])
    for key in ("changes_found", "uncertain_increments", "counters", "dataset", "workload"):
        del data[key]
    record = MixRecord.from_data(data)
    assert record.changes_found is None
    assert integrity(record) is None
    assert record.uncertain_increments == 0
    assert record.counters == {}
    assert record.workload is None


@pytest.mark.parametrize(
    ("where", "value", "says"),
    [
        (("operations", "read", "count"), "many", "count is not a whole number"),
        (("operations", "read", "conflicts"), {"ConflictError": 1.5}, "conflicts"),
        (("operations", "read"), [], "an operation is not an object"),
        (("intervals",), {}, "operations or intervals of the wrong type"),
        (("counters",), [1], "counters or dataset of the wrong type"),
        (("seconds",), "long", "seconds is not a number"),
    ],
)
def test_a_record_of_the_wrong_shape_is_refused_when_the_file_is_loaded(
    tmp_path, where, value, says
):
    document = _document()
    target = document["mix"][0]
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(UsageError, match=f"mix record 1: {says}"):
        resultfile.load(str(path))


def test_where_the_workers_ran_is_read_from_the_metadata():
    result = resultfile.loads(BASE.read_text(encoding="utf-8"))
    place = {"hostname": "h", "pid": 1}
    result.metadata["mix_workers"] = {"zeo_fs": {"0": {"host": "a", **place}, "1": {"host": "b"}}}
    skew = {"database": "zeo_fs", "concurrency": 2, "object_count": 300, "repetition": 1}
    result.metadata["barrier_skew"] = [
        {**skew, "phase": "mix", "skew_seconds": 0.25},
        {**skew, "phase": "add", "skew_seconds": 9.0},  # not the mix's barrier
    ]
    run = MixRun.of(result)
    assert dict(run.hosts_of("zeo_fs")) == {"a": 1, "b": 1}
    assert run.hosts_of("sqlite") == {}
    assert run.skews == {"zeo_fs": (0.25,)}

"""The result file: lossless, versioned, atomic."""

import dataclasses
import json
import os
import pathlib

import pytest
from sample_run import sample_result

from zodbshootout.errors import UsageError
from zodbshootout.results import file as resultfile
from zodbshootout.results.record import PhaseTiming, RunResult


def test_round_trip_is_lossless():
    result = sample_result()
    result.refused = ["other"]
    result.interrupted = True
    loaded = resultfile.loads(resultfile.dumps(result))
    assert loaded == result
    # Failure phases come back as tuples, as the runner makes them.
    assert isinstance(loaded.failures[0].phases, tuple)


def test_raw_durations_are_kept_not_only_rates():
    document = json.loads(resultfile.dumps(sample_result()))
    assert document["format"] == "zodbshootout-result"
    assert document["version"] == resultfile.FORMAT_VERSION
    first = document["measurements"][0]
    assert (
        first.items()
        >= {
            "database": "postgresql",
            "concurrency": 2,
            "object_count": 1000,
            "repetition": 1,
            "phase": "add",
            "worker": 0,
            "seconds": 0.1,
            "objects": 1000,
            "loads": 1000,
            "storage_loads": 1000,
            "cache_hits": 0,
        }.items()
    )


def test_save_then_load(tmp_path):
    path = tmp_path / "run.json"
    resultfile.save(sample_result(), str(path))
    assert resultfile.load(str(path)) == sample_result()
    # Nothing but the result is left in the directory.
    assert os.listdir(tmp_path) == ["run.json"]


def test_failed_save_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    resultfile.save(sample_result(), str(path))
    before = path.read_text()

    def broken_replace(_source, _target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space"):
        resultfile.save(RunResult(["x"], [1], [1], ["add"], 1), str(path))
    assert path.read_text() == before
    assert os.listdir(tmp_path) == ["run.json"]


def test_saved_file_is_readable_by_others(tmp_path):
    path = tmp_path / "run.json"
    old = os.umask(0o022)
    try:
        resultfile.save(sample_result(), str(path))
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_dash_writes_stdout(capsys):
    resultfile.save(sample_result(), "-")
    assert resultfile.loads(capsys.readouterr().out) == sample_result()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "not valid JSON"),
        ('{"a": 1}', "not a zodbshootout result file"),
        ('{"format": "zodbshootout-result", "version": 99}', "version 99"),
        ('{"format": "zodbshootout-result", "version": 1}', "damaged: KeyError"),
    ],
)
def test_foreign_or_broken_files_are_usage_errors(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(UsageError, match=message):
        resultfile.load(str(path))


def test_missing_file_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"cannot read result file .*missing\.json"):
        resultfile.load(str(tmp_path / "missing.json"))


def test_metadata_json_cannot_hold_is_saved_not_fatal():
    result = sample_result()
    result.metadata["odd"] = {"set": {"b", "a"}, "object": pathlib.PurePosixPath("/x")}
    document = json.loads(resultfile.dumps(result))
    assert document["metadata"]["odd"] == {"set": ["a", "b"], "object": "/x"}


def test_every_timing_field_round_trips_and_missing_optional_ones_default():
    result = sample_result()
    first = result.measurements[0]
    extras = {"conflicts": 3, "object_growth": {"*total*": 5, "PersistentMapping": 1}}
    extra = dataclasses.replace(
        first.timing, **{k: v for k, v in extras.items() if hasattr(first.timing, k)}
    )
    result.measurements[0] = dataclasses.replace(first, timing=extra)
    assert resultfile.loads(resultfile.dumps(result)) == result
    # A file written before such fields existed still loads, with their defaults.
    document = json.loads(resultfile.dumps(sample_result()))
    optional = {
        f.name for f in dataclasses.fields(PhaseTiming) if f.default is not dataclasses.MISSING
    }
    for row in document["measurements"]:
        for name in optional:
            row.pop(name, None)
    assert resultfile.from_document(document) == sample_result()


def test_a_version_1_file_keeps_its_refused_setup_failed_and_signal():
    """Version 1 kept these in metadata; they load into RunResult's own fields."""
    document = json.loads(resultfile.dumps(sample_result()))
    document["version"] = 1
    for key in ("refused", "setup_failed", "signal"):
        del document[key]
    document["metadata"].update(refused=["a"], setup_failed=["a", "b"], signal="SIGTERM")
    loaded = resultfile.from_document(document)
    assert (loaded.refused, loaded.setup_failed, loaded.signal) == (["a"], ["a", "b"], "SIGTERM")
    assert not {"refused", "setup_failed", "signal"} & set(loaded.metadata)
    assert json.loads(resultfile.dumps(loaded))["version"] == resultfile.FORMAT_VERSION

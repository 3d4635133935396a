"""A hostile result file is refused on load, one line naming the field; never an internal error.

The named cases are those an adversarial run found; the hypothesis test puts
hostile values anywhere in a real saved document and runs show, compare,
history, export and plot on it.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zodbshootout.cli.entry import main

from support.hostile import HOSTILE_VALUES, SURROGATE, base_document, paths, set_path


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


NAMED = [
    (("measurements", 0, "loops"), 0, "loops, worker or repetition out of range"),
    (("measurements", 0, "seconds"), 10**400, "measurements[0].seconds is not a finite number"),
    (("metadata", "started"), float("nan"), "metadata.started is not a finite number"),
    (("metadata", "environment"), "linux", "metadata.environment is str, not an object"),
    (("metadata", "stopping_rule"), "x", "metadata.stopping_rule is str, not an object"),
    (("metadata", "label"), SURROGATE, "metadata.label is not text (a lone surrogate)"),
    (("metadata", "label"), "L" * 5000, "metadata.label is longer than 200 characters"),
    (("metadata", "label"), "L" * 5_000_000, "metadata.label is longer than 2,097,152"),
    (("databases", 0), "d" * 1000, "databases is longer than 200 characters"),
    (("metadata", "barrier_skew", 0), {"database": "x"}, "has no concurrency"),
]


@pytest.mark.parametrize(("path", "value", "says"), NAMED)
@pytest.mark.parametrize("command", ["show", "history", "export", "compare"])
def test_a_hostile_value_is_one_line_naming_the_field(tmp_path, path, value, says, command):
    document = base_document()
    set_path(document, path, value)
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(document, ensure_ascii=True))
    argv = {
        "show": ["show", str(saved)],
        "history": ["history", str(saved)],
        "export": ["export", str(saved), "-o", str(tmp_path / "out.json")],
        "compare": ["compare", str(saved), str(saved)],
    }[command]
    started = time.monotonic()
    code, stdout, stderr = run_main(*argv)
    assert (code, stdout) == (2, ""), stderr
    assert stderr.count("\n") == 1, stderr[:500]
    assert says in stderr
    assert len(stderr) < 1000
    assert time.monotonic() - started < 30


def test_an_integer_of_5000_digits_is_refused_in_one_line(tmp_path):
    saved = tmp_path / "run.json"
    text = json.dumps(base_document()).replace('"repetitions": 3', '"repetitions": ' + "9" * 5000)
    saved.write_text(text)
    code, _stdout, stderr = run_main("show", str(saved))
    assert code == 2
    assert stderr.startswith(f"zodbshootout show: error: {saved} is not a zodbshootout result")
    assert stderr.count("\n") == 1


def test_a_5_mb_label_does_not_reach_plot(tmp_path):
    pytest.importorskip("matplotlib")
    document = base_document()
    document["metadata"]["label"] = "L" * 5_000_000
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(document))
    started = time.monotonic()
    code, _stdout, stderr = run_main("plot", str(saved), "-o", str(tmp_path / "chart.png"))
    assert code == 2, stderr
    assert "metadata.label is longer than" in stderr
    assert time.monotonic() - started < 30
    assert not (tmp_path / "chart.png").exists()


HOSTILE = st.one_of(
    st.sampled_from(HOSTILE_VALUES),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
    st.text(max_size=20),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


BASE = base_document()
PATHS = sorted(paths(BASE), key=repr)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(changes=st.lists(st.tuples(st.sampled_from(PATHS), HOSTILE), min_size=1, max_size=3))
def test_no_hostile_result_file_makes_an_internal_error(tmp_path, changes):
    document = copy.deepcopy(BASE)
    for path, value in changes:
        with contextlib.suppress(KeyError, IndexError, TypeError):
            set_path(document, path, copy.deepcopy(value))  # no shared [] nested in itself
    saved, good = tmp_path / "hostile.json", tmp_path / "good.json"
    saved.write_text(json.dumps(document, ensure_ascii=True))
    good.write_text(json.dumps(BASE))
    for argv in (
        ["show", str(saved)],
        ["show", str(saved), "--format", "json"],
        ["show", str(saved), "--format", "markdown"],
        ["compare", str(good), str(saved)],
        ["history", str(good), str(saved)],
        ["export", str(saved), "-o", str(tmp_path / "out.json")],
    ):
        code, _stdout, stderr = run_main(*argv)
        assert code in (0, 1, 2), (argv, stderr)
        assert "internal error" not in stderr, (argv, changes, stderr)
        assert "Traceback" not in stderr
        if code == 2:
            assert stderr.count("\n") == 1, stderr[:500]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(st.sampled_from(PATHS), HOSTILE), min_size=1, max_size=2))
def test_no_hostile_result_file_makes_plot_fail_internally(tmp_path_factory, changes):
    pytest.importorskip("matplotlib")
    directory = tmp_path_factory.mktemp("plot")
    document = copy.deepcopy(BASE)
    for path, value in changes:
        with contextlib.suppress(KeyError, IndexError, TypeError):
            set_path(document, path, copy.deepcopy(value))  # no shared [] nested in itself
    saved = directory / "hostile.json"
    saved.write_text(json.dumps(document, ensure_ascii=True))
    code, _stdout, stderr = run_main("plot", str(saved), "-o", str(directory / "chart.png"))
    assert code in (0, 1, 2), stderr
    assert "internal error" not in stderr, (changes, stderr)

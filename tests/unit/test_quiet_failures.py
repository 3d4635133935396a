"""Without --debug, nothing prints a traceback: each failure is one line.

Libraries log their errors with the exception attached (ZODB's pack does, when
the server goes away mid-pack); result files and configurations may be
binary, damaged, or include themselves.
"""

from __future__ import annotations

import json
import logging
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zodbshootout.redact import install_log_redaction


@pytest.fixture
def last_resort():
    """Python's last-resort handler: what prints a plain run's log records."""
    resort = logging.lastResort
    assert resort is not None
    level, filters = resort.level, list(resort.filters)
    yield resort
    resort.setLevel(level)
    resort.filters[:] = filters


def test_a_library_error_with_its_exception_is_logged_in_one_line(last_resort, capsys):
    install_log_redaction({"Pa55-w0rd"})
    logger = logging.getLogger("ZODB.DB")
    try:
        raise ConnectionResetError("the server went away (password=Pa55-w0rd)")
    except ConnectionResetError:
        # As logger.exception("packing") does, when no handler is configured.
        record = logger.makeRecord(
            logger.name, logging.ERROR, __file__, 1, "packing", (), sys.exc_info()
        )
    last_resort.handle(record)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err == ("ZODB.DB: packing: ConnectionResetError: the server went away (password=***)\n")


def _damaged_result(**changes) -> str:
    from sample_run import sample_result

    from zodbshootout.results import file as resultfile

    document = resultfile.to_document(sample_result())
    for key, value in changes.items():
        if key.startswith("row_"):
            document["measurements"][0][key[4:]] = value
        else:
            document[key] = value
    return json.dumps(document)


BAD_RESULT_FILES = {
    "binary": b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe",
    "latin-1": "caf\xe9".encode("latin-1"),
    "deeply nested": b"[" * 100_000,
    "not an object": b"[1, 2, 3]",
    "databases not a list": _damaged_result(databases=5).encode(),
    "seconds as text": _damaged_result(row_seconds="fast").encode(),
    "a worker as a list": _damaged_result(row_worker=[1]).encode(),
    "metadata not an object": _damaged_result(metadata=[]).encode(),
    "repetitions negative": _damaged_result(repetitions=-1).encode(),
}


@pytest.mark.parametrize("subcommand", ["show", "compare", "plot", "export"])
@pytest.mark.parametrize("kind", list(BAD_RESULT_FILES))
def test_subcommands_refuse_a_bad_result_file_in_one_line(tmp_path, capsys, subcommand, kind):
    from zodbshootout.cli.entry import main

    bad = tmp_path / "bad.json"
    bad.write_bytes(BAD_RESULT_FILES[kind])
    argv = {
        "show": ["show", str(bad)],
        "compare": ["compare", str(bad), str(bad)],
        "plot": ["plot", str(bad), "-o", str(tmp_path / "chart.png")],
        "export": ["export", str(bad), "-o", str(tmp_path / "suite.json")],
    }[subcommand]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1, err
    assert err.startswith(f"zodbshootout {subcommand}: error: {bad}")
    assert not (tmp_path / "chart.png").exists()
    assert not (tmp_path / "suite.json").exists()


def test_a_directory_is_no_result_file(tmp_path, capsys):
    from zodbshootout.cli.entry import main

    assert main(["show", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"zodbshootout show: error: refusing to read result file {tmp_path}: "
        "it is a directory, not a regular file\n"
    )


def test_plot_of_a_run_whose_largest_cells_all_failed_still_draws(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from sample_run import sample_result

    from zodbshootout.cli.entry import main
    from zodbshootout.results import file as resultfile

    document = resultfile.to_document(sample_result())
    document["object_counts"] = [100, 1000]
    for row in document["measurements"]:
        row["object_count"] = 100  # nothing at 1000 objects, the bar chart's cells
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps(document))
    chart = tmp_path / "chart.png"
    assert main(["plot", str(saved), "-o", str(chart), "-q"]) == 0, capsys.readouterr().err
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_plot_of_a_run_that_measured_nothing_says_so(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from sample_run import sample_result

    from zodbshootout.cli.entry import main
    from zodbshootout.results import file as resultfile

    result = sample_result()
    result.measurements.clear()
    saved = tmp_path / "run.json"
    resultfile.save(result, str(saved))
    assert main(["plot", str(saved), "-o", str(tmp_path / "chart.png")]) == 2
    assert capsys.readouterr().err == (
        "zodbshootout plot: error: nothing to plot: no cell of this run was measured\n"
    )


def _run_main(*argv: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from zodbshootout.cli.entry import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_an_include_loop_is_a_configuration_error_naming_file_and_line(tmp_path):
    first, second = tmp_path / "first.conf", tmp_path / "second.conf"
    first.write_text("# the databases\n%include second.conf\n")
    second.write_text("\n\n%include first.conf\n")
    code, stdout, stderr = _run_main(str(first), "-n", "5")
    assert code == 2, stderr
    assert stdout == ""
    assert stderr == (
        f"zodbshootout: error: {second}:3: %include loop: {first} includes {second} "
        f"includes {first}\n"
    )


def test_an_included_binary_file_is_a_configuration_error_naming_file_and_line(tmp_path):
    main_config = tmp_path / "main.conf"
    main_config.write_text("%include blob.bin\n")
    (tmp_path / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    code, stdout, stderr = _run_main(str(main_config), "-n", "5")
    assert code == 2, stderr
    assert stdout == ""
    assert stderr == (
        f"zodbshootout: error: {main_config}:1: the included file {tmp_path / 'blob.bin'} "
        "is not UTF-8 text\n"
    )


def test_a_binary_or_looping_logging_configuration_is_a_usage_error(tmp_path):
    config = tmp_path / "mem.conf"
    config.write_text("<zodb mem>\n  <mappingstorage/>\n</zodb>\n")
    binary = tmp_path / "log.conf"
    binary.write_bytes(b"\x83\xff<eventlog>")
    code, _stdout, stderr = _run_main(str(config), "--threads", "--log", str(binary))
    assert code == 2
    assert stderr == f"zodbshootout: error: --log {binary}: the file {binary} is not UTF-8 text\n"
    looping = tmp_path / "loop.conf"
    looping.write_text("%include loop.conf\n")
    code, _stdout, stderr = _run_main(str(config), "--threads", "--log", str(looping))
    assert code == 2
    assert stderr == (
        f"zodbshootout: error: --log {looping}: {looping}:1: %include loop: {looping} "
        f"includes {looping}\n"
    )


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)


@st.composite
def _damaged_documents(draw):
    """A saved run with one value, somewhere in it, replaced by arbitrary JSON."""
    from sample_run import sample_result

    from zodbshootout.results import file as resultfile

    document = resultfile.to_document(sample_result())
    where = document
    while True:
        keys = list(where) if isinstance(where, dict) else list(range(len(where)))
        key = draw(st.sampled_from(keys))
        child = where[key]
        if isinstance(child, dict | list) and child and draw(st.booleans()):
            where = child
            continue
        where[key] = draw(_JSON_VALUES)
        return document


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_damaged_documents(), subcommand=st.sampled_from(["show", "compare", "export"]))
def test_any_damaged_result_file_is_shown_or_refused_in_one_line(document, subcommand):
    import contextlib
    import io
    import tempfile

    from zodbshootout.cli.entry import main

    with tempfile.TemporaryDirectory() as directory:
        path = f"{directory}/run.json"
        with open(path, "w") as file:
            json.dump(document, file)
        argv = {
            "show": ["show", path, "--format", "table"],
            "compare": ["compare", path, path],
            "export": ["export", path, "-o", f"{directory}/suite.json"],
        }[subcommand]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    assert code in (0, 2), err.getvalue()
    if code == 2:
        assert err.getvalue().count("\n") == 1, err.getvalue()
        assert out.getvalue() == ""


def test_sections_nested_absurdly_deep_are_a_configuration_error(write_config):
    """40 nested <demostorage>s make ZODB build a name of 2^40 characters (15 GB at 40)."""
    from zodbshootout.config.loader import MAX_SECTION_DEPTH, ConfigError, load_config

    depth = 40
    path = write_config(
        "<zodb deep>\n"
        + "<demostorage>\n" * depth
        + "<mappingstorage/>\n"
        + "</demostorage>\n" * depth
        + "</zodb>\n"
    )
    with pytest.raises(ConfigError) as refused:
        load_config(path, "/nonexistent")
    assert str(refused.value) == (
        f"{path}:{MAX_SECTION_DEPTH + 1}: sections nested more than {MAX_SECTION_DEPTH} deep"
    )
    # Ordinary nesting is fine: <zodb> <embeddedzeo> <filestorage>, demo over base.
    ordinary = write_config(
        "<zodb demo>\n<demostorage>\n<mappingstorage base/>\n<mappingstorage changes/>\n"
        "</demostorage>\n</zodb>\n",
        name="ordinary.conf",
    )
    assert load_config(ordinary, "/nonexistent").names == ["demo"]


@pytest.mark.parametrize("key", ["\n", "a\rb", "\x00"])
def test_a_damaged_field_whose_name_holds_a_control_character_is_one_line(key, tmp_path, capsys):
    # Hypothesis found it: a key "\n" broke the one-line error in two.
    from sample_run import sample_result

    from zodbshootout.cli.entry import main
    from zodbshootout.results import file as resultfile

    document = resultfile.to_document(sample_result())
    document["databases"] = {key: 1e19}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    assert main(["show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert repr(key) in err


@pytest.mark.parametrize("when", [253402300800.0, -1.0])
def test_a_start_time_no_date_can_hold_is_refused_in_one_line(when, tmp_path, capsys):
    # Hypothesis found it: year 10000 made history an internal error.
    from sample_run import sample_result

    from zodbshootout.cli.entry import main
    from zodbshootout.results import file as resultfile

    document = resultfile.to_document(sample_result())
    document["metadata"]["started"] = when
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    for argv in (["show", str(path)], ["history", str(path), str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "metadata.started is not a time between 1970 and 9999" in err
        assert err.count("\n") == 1, err

"""Bad input ends in one line on stderr and exit code 2 — never a traceback.

The named cases read as the specification; the hypothesis tests throw
generated option values and configuration texts at the parser and accept
only a clean result or a clean, one-line error.
"""

from __future__ import annotations

import logging
import os
import string
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zodbshootout import faults
from zodbshootout.cli import entry as cli
from zodbshootout.cli.measure import exit_code
from zodbshootout.config.loader import ConfigError, load_config
from zodbshootout.database.drivers import describe_open_error
from zodbshootout.redact import RedactingFilter
from zodbshootout.results.record import Failure, RunResult

from support import hostile
from support.inprocess import assert_one_line_error, run_main

IN_MEMORY = """
<zodb mem>
  <mappingstorage/>
</zodb>
"""


@pytest.fixture(autouse=True)
def _restore_logging():
    """cli.main sets up logging for its process; give the test process its own back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    last_resort = logging.lastResort
    resort_level = last_resort.level if last_resort else None
    resort_filters = list(last_resort.filters) if last_resort else []
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    if last_resort is not None:
        last_resort.setLevel(resort_level)
        last_resort.filters[:] = resort_filters


@pytest.fixture
def config_path(write_config):
    return write_config(IN_MEMORY)


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["-n", "0"], "-n/--object-counts: '0' is not a whole number from 1 to 1,000,000"),
        (["-c", "-1"], "-c/--concurrency: '-1' is not a whole number from 1 to 256"),
        (["-n", "abc"], "'abc' is not a whole number"),
        (["-n", "10,"], "'' is not a whole number"),
        (["-r", "0"], "'0' is not a whole number from 1 to 1,000"),
        (["-s", "x"], "--object-size"),
        (["--timeout", "0"], "'0' is not a number of seconds from 1 to 604,800"),
        (["--timeout", "nan"], "'nan' is not a number of seconds from 1 to 604,800"),
        (["--aggregate", "max"], "invalid choice: 'max'"),
        (["chilly"], "unknown phase 'chilly'; choose from add, update"),
        (["--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["--index-entries", "-1"], "--index-entries: '-1' is not a whole number from 0 to 1,000"),
        (["--index-entries", "two"], "--index-entries"),
        (
            ["--threads", "--cache-trace", "traces"],
            "--cache-trace traces worker processes; run without --threads/--gevent",
        ),
    ],
)
def test_fails_with_bad_option_value(config_path, options, says):
    code, stdout, stderr = run_main(config_path, *options)
    assert_one_line_error(code, stdout, stderr)
    assert says in stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("<zodb a>\n  <filestorage>\n    path /tmp/x.fs\n", ":3: unclosed sections not allowed"),
        ("<zodb a>\n  <nosuchstorage/>\n</zodb>\n", ":2: unknown type name: 'nosuchstorage'"),
        (
            "<zodb a>\n  <mappingstorage/>\n  colour blue\n</zodb>\n",
            ":3: 'colour' is not a known key name",
        ),
        ("", "no database to measure: add a <zodb NAME> section"),
        ("just some words\n", ":1: 'just' is not a known key name"),
        (
            "<zodb a>\n  <filestorage>\n    path $(NO_SUCH_VARIABLE_HERE)/x.fs\n  </filestorage>\n"
            "</zodb>\n",
            "NO_SUCH_VARIABLE_HERE",
        ),
    ],
)
def test_fails_with_malformed_configuration(write_config, text, says):
    path = write_config(text)
    code, stdout, stderr = run_main(path, "-n", "10")
    assert_one_line_error(code, stdout, stderr)
    assert path in stderr
    assert says in stderr


def test_fails_with_missing_or_binary_configuration(tmp_path):
    code, stdout, stderr = run_main(str(tmp_path / "missing.conf"))
    assert_one_line_error(code, stdout, stderr)
    missing = tmp_path / "missing.conf"
    assert f"cannot read the configuration {missing}: No such file or directory" in stderr
    binary = tmp_path / "binary.conf"
    binary.write_bytes(b"\xff\xfe\x00<zodb>")
    code, stdout, stderr = run_main(str(binary))
    assert_one_line_error(code, stdout, stderr)
    assert "not UTF-8" in stderr


def test_debug_shows_the_traceback_and_still_exits_2(config_path):
    code, _stdout, stderr = run_main(config_path, "-n", "0", "--debug")
    assert code == cli.EXIT_USAGE
    assert "Traceback (most recent call last)" in stderr
    assert stderr.splitlines()[-1] == (
        "zodbshootout: error: argument -n/--object-counts: '0' is not a whole number from 1 to "
        "1,000,000 (see zodbshootout --help)"
    )


def test_open_errors_say_what_to_check():
    refused = OSError('connection to server at "127.0.0.1", port 1 failed: Connection refused')
    denied = RuntimeError("(1045, \"Access denied for user 'u'@'localhost'\")")
    unknown = ModuleNotFoundError("No module named 'psycopg2cffi'", name="psycopg2cffi")
    assert "check that the server is running" in describe_open_error(refused)
    assert "check the user and password" in describe_open_error(denied)
    assert "pip install psycopg2cffi" in describe_open_error(unknown)
    ours = ModuleNotFoundError("No module named 'pg8000'", name="pg8000")
    assert "pip install '.[postgresql]' in the zodbshootout checkout" in describe_open_error(ours)
    mysql = ModuleNotFoundError("No module named 'mysql'", name="mysql")
    assert "pip install mysql-connector-python" in describe_open_error(mysql)
    auto = RuntimeError("Driver 'auto' is not available (Module: 'MySQLdb', Module: 'pymysql')")
    assert describe_open_error(auto).startswith("no MySQL driver is installed: ")


def test_every_driver_extra_is_an_extra_of_the_package():
    # The storage kinds name the extras; pyproject.toml is what defines them.
    import pathlib

    import tomllib

    from zodbshootout import storages

    root = pathlib.Path(__file__).resolve().parents[2]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    assert storages.drivers()
    for driver in storages.drivers():
        assert (driver.extra is None) != (driver.package is None), driver
        assert driver.extra is None or driver.extra in extras, driver


# --- exit codes -------------------------------------------------------------


def result_with(databases, failed=(), refused=(), setup_failed=(), measured=False):
    from zodbshootout.results.record import Measurement, PhaseTiming

    result = RunResult(list(databases), [10], [1], ["add"], 1)
    for name in failed:
        result.failures.append(Failure(name, 1, 10, ("add",), "reason"))
    result.refused = list(refused)
    result.setup_failed = list(setup_failed)
    if measured:
        timing = PhaseTiming("add", 0, 0.1, 10, 0, None, None)
        result.measurements.append(Measurement(databases[0], 1, 10, 1, timing))
    return result


def test_exit_2_only_when_no_database_could_be_used():
    alone = result_with(["a"], failed=["a"], setup_failed=["a"])
    assert exit_code(alone) == cli.EXIT_USAGE
    refused_and_unreachable = result_with(
        ["a", "b"], failed=["a", "b"], refused=["a"], setup_failed=["a", "b"]
    )
    assert exit_code(refused_and_unreachable) == cli.EXIT_USAGE
    one_of_two = result_with(["a", "b"], failed=["b"], setup_failed=["b"], measured=True)
    assert exit_code(one_of_two) == cli.EXIT_CELLS_FAILED
    failed_in_a_stage = result_with(["a"], failed=["a"])
    assert exit_code(failed_in_a_stage) == cli.EXIT_CELLS_FAILED
    assert exit_code(result_with(["a"], measured=True)) == cli.EXIT_OK


def test_interrupted_runs_exit_with_the_signal_that_stopped_them():
    result = result_with(["a"], measured=True)
    result.interrupted = True
    result.signal = "SIGTERM"
    assert exit_code(result) == cli.EXIT_SIGTERM
    result.signal = "SIGINT"
    assert exit_code(result) == cli.EXIT_SIGINT


# --- the fault hook and log redaction ----------------------------------------


def test_fault_specification_is_parsed_strictly():
    assert faults.parse_fault("db:cold:1:kill") == faults.Fault("db", "cold", 1, "kill")
    assert faults.parse_fault("a:b:add:0:hang").database == "a:b"
    for bad in ("", "cold:1:kill", "db:cold:x:kill", "db:cold:1:explode"):
        with pytest.raises(ValueError, match="ZODBSHOOTOUT_FAULT"):
            faults.parse_fault(bad)
    assert faults.fault_for("db", {}) is None
    assert faults.fault_for("other", {"ZODBSHOOTOUT_FAULT": "db:cold:1:kill"}) is None
    assert faults.fault_for("db", {"ZODBSHOOTOUT_FAULT": "*:cold:1:kill"}) is not None


def test_log_records_lose_their_passwords():
    record = logging.LogRecord(
        "relstorage",
        logging.WARNING,
        __file__,
        1,
        "Unable to connect to %s",
        ("dbname=x password=hunter2 host=h",),
        None,
    )
    try:
        raise RuntimeError("connect failed for user:s3cret@db")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    RedactingFilter({"hunter2", "s3cret"}).filter(record)
    text = logging.Formatter().format(record)
    assert "hunter2" not in text
    assert "s3cret" not in text
    assert "password=***" in text


# --- generated input ----------------------------------------------------------

_NUMBERISH = st.one_of(
    st.integers(min_value=-5, max_value=5).map(str),
    st.text(alphabet=hostile.NUMBERISH_ALPHABET, max_size=6),
    st.text(max_size=8),
)
_OPTION = st.one_of(
    st.tuples(st.sampled_from(hostile.NUMBER_OPTIONS), _NUMBERISH),
    st.tuples(st.sampled_from(hostile.COUNT_OPTIONS), _NUMBERISH),
    st.tuples(st.just("--aggregate"), st.sampled_from(hostile.AGGREGATES)),
    st.tuples(
        st.just("PHASE"),
        st.sampled_from(hostile.PHASE_WORDS)
        | st.text(alphabet=string.ascii_letters, min_size=1, max_size=8),
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(options=st.lists(_OPTION, max_size=5))
def test_generated_options_give_a_clean_error(options):
    """Whatever the options, a missing configuration file or a bad value: exit 2, one line."""
    argv = ["/nonexistent/zodbshootout-test.conf"]
    for flag, value in options:
        argv += [value] if flag == "PHASE" else [flag, value]
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)  # whatever an option might create stays in here
        try:
            code, stdout, stderr = run_main(*argv)
        finally:
            os.chdir(cwd)
    assert_one_line_error(code, stdout, stderr)


_NAME = st.sampled_from(hostile.SECTION_NAMES)
_KEY_LINE = st.one_of(
    st.sampled_from(hostile.CONFIG_KEY_LINES),
    st.text(alphabet=string.printable, max_size=20),
)
_SECTION_TYPE = st.sampled_from(hostile.SECTION_TYPES)


@st.composite
def config_texts(draw):
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["open", "close", "empty", "key"]))
        if kind == "open":
            lines.append(f"<{draw(_SECTION_TYPE)} {draw(_NAME)}>")
        elif kind == "close":
            lines.append(f"</{draw(_SECTION_TYPE)}>")
        elif kind == "empty":
            lines.append(f"<{draw(_SECTION_TYPE)}/>")
        else:
            lines.append(draw(_KEY_LINE))
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=config_texts())
def test_generated_configurations_load_or_fail_cleanly(text):
    with tempfile.TemporaryDirectory() as scratch:
        path = os.path.join(scratch, "generated.conf")
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        try:
            config = load_config(path, data_dir=scratch)
        except ConfigError as e:
            message = str(e)
            assert message.startswith(path)
            assert "\n" not in message
        else:
            assert config.names
            assert all(isinstance(n, str) for n in config.names)


def test_optional_option_values_leave_phase_names_alone(tmp_path):
    from zodbshootout.cli.arguments import bind_optional_values

    config = tmp_path / "c.conf"
    config.write_text("")
    assert bind_optional_values(["c.conf", "--threads", "cold", "hot"]) == [
        "c.conf",
        "--threads=shared",
        "cold",
        "hot",
    ]
    assert bind_optional_values(["c.conf", "--threads", "unique", "cold"]) == [
        "c.conf",
        "--threads",
        "unique",
        "cold",
    ]
    assert bind_optional_values(["--btrees", str(config)]) == ["--btrees=IO", str(config)]
    assert bind_optional_values(["c.conf", "--btrees"]) == ["c.conf", "--btrees"]
    # Anything else is the option's (wrong) value, and is reported as such.
    assert bind_optional_values(["--threads", "privat"]) == ["--threads", "privat"]

"""Every numeric option of every parser refuses NaN, infinities and values beyond its range.

Generated from the parsers themselves: every action of the run's parser and
of each subcommand's is visited, so an option added later is covered without
a new case here.  A numeric option must use a type of
:mod:`zodbshootout.cli.numbers` (a bare ``int`` or ``float`` lets ``nan``,
``inf`` or a 400-digit number through), and each hostile value, in every way
the option is written (``read=inf``, ``1,inf``), is refused by the real
command line in one line with exit code 2, before anything runs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import numbers

import pytest

from zodbshootout.cli import entry as cli
from zodbshootout.cli.arguments import build_parser
from zodbshootout.cli.commands import COMMANDS, load_command
from zodbshootout.cli.numbers import Number, Numeric
from zodbshootout.cli.subcommand import build_subcommand_parser

#: Not numbers, or numbers no range holds.
HOSTILE = ["nan", "NaN", "-nan", "inf", "-inf", "+Infinity", "1e308", "-1e308", "1e309", "9" * 400]
#: What a numeric type reads as a number, to find types that are numeric but not Numeric.
PROBES = ["1", "100", "64KB", "read=1", "5%"]


def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """The run's parser and every subcommand's, by the word that selects it ("" for a run)."""
    found = [("", build_parser())]
    found += [(name, build_subcommand_parser(name, load_command(name))) for name in COMMANDS]
    return found


def numeric_options() -> list[tuple[str, str, Numeric]]:
    """(subcommand, option string, type) of every option whose type is Numeric."""
    return [
        (name, action.option_strings[-1], action.type)
        for name, parser in parsers()
        for action in parser._actions
        if isinstance(action.type, Numeric) and action.option_strings
    ]


def is_numeric(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Number):
        return True
    if isinstance(value, (list, tuple)):
        return any(is_numeric(item) for item in value)
    return False


def test_every_numeric_option_has_a_type_with_a_range():
    bare = []
    for name, parser in parsers():
        for action in parser._actions:
            kind = action.type
            if kind is None or isinstance(kind, Numeric):
                continue
            for probe in PROBES:
                try:
                    value = kind(probe)  # type: ignore[operator]
                except (ValueError, TypeError, argparse.ArgumentTypeError, Exception):
                    continue
                if kind in (int, float) or is_numeric(value):
                    bare.append(f"zodbshootout {name} {'/'.join(action.option_strings)}")
                    break
    assert bare == [], "numeric options without a range (use zodbshootout.cli.numbers)"


def test_the_walk_finds_the_options_of_the_issue():
    found = {(name, option) for name, option, _kind in numeric_options()}
    for expected in [
        ("mix", "--warmup"),
        ("mix", "--duration"),
        ("mix", "--rate"),
        ("mix", "--mix"),
        ("mix", "--timeout"),
        ("mix", "--concurrency"),
        ("", "--timeout"),
        ("", "--object-counts"),
        ("compare", "--fail-if-slower"),
        ("versions", "--rounds"),
        ("cachesim", "--sizes"),
    ]:
        assert expected in found


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def command_line(name: str, option: str, value: str) -> list[str]:
    """A command line of subcommand *name* (or a run) with *option* set to *value*.

    The positional arguments are placeholders: argparse converts every
    option's value while it parses, before any file is read.
    """
    head = [name] if name else []
    return [*head, "placeholder", f"{option}={value}"]


def cases() -> list[tuple[str, str, str]]:
    found = []
    for name, option, kind in numeric_options():
        for value in HOSTILE + kind.outside():
            for form in kind.hostile_forms(value):
                found.append((name, option, form))
    return found


@pytest.mark.parametrize("argv", [pytest.param(c, id=" ".join(c)[:60]) for c in cases()])
def test_hostile_numbers_are_refused_in_one_line(argv):
    name, option, value = argv
    code, stdout, stderr = run_main(*command_line(name, option, value))
    assert code == cli.EXIT_USAGE, stderr
    assert stdout == ""
    assert stderr.count("\n") == 1, stderr
    assert f"error: argument {option}" in stderr or f"/{option}:" in stderr, stderr
    assert "Traceback" not in stderr


def test_every_number_type_accepts_its_bounds():
    for name, option, kind in numeric_options():
        if isinstance(kind, Number):
            for bound in (kind.minimum, kind.maximum):
                inside = bound if not (kind.above or kind.below) else None
                if inside is not None:
                    assert kind(str(kind.kind(inside))) == inside, (name, option)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--warmup", "nan"], "'nan' is not a number of seconds from 0 to 604,800"),
        (["-d", "inf"], "'inf' is not a number of seconds from 0.1 to 604,800"),
        (["-d", "1e-300"], "from 0.1 to"),
        (["--rate", "inf"], "from 0.01 to 1,000,000"),
        (["--rate", "1e-320"], "from 0.01 to 1,000,000"),
        (["--mix", "read=inf"], "weight 'inf' of read is not a number from 0 to 1,000,000"),
        (["--mix", "read=1e308,update=1e308"], "weight '1e308' of read"),
        (["--mix", ""], "'' is not OPERATION=WEIGHT"),
        (["--timeout", "inf"], "from 1 to 604,800"),
        (["--timeout", "1e-9"], "from 1 to 604,800"),
        (["-c", "300"], "'300' is not a whole number from 1 to 256"),
    ],
)
def test_the_issues_mix_values_are_refused(write_config, argv, says):
    config = write_config("<zodb mem>\n  <mappingstorage/>\n</zodb>\n")
    code, stdout, stderr = run_main("mix", config, "--threads", *argv)
    assert (code, stdout) == (cli.EXIT_USAGE, ""), stderr
    assert stderr.count("\n") == 1, stderr
    assert says in stderr


def test_a_duration_takes_minutes_and_hours():
    from zodbshootout.cli.numbers import Seconds

    seconds = Seconds(1, 604_800)
    assert seconds("90") == 90.0
    assert seconds("90s") == 90.0
    assert seconds("15m") == 900.0
    assert seconds("2h") == 7200.0
    for bad in ("h", "2x", "nanh", "infh", "0.5s", "200h"):
        with pytest.raises(argparse.ArgumentTypeError):
            seconds(bad)


def test_restart_clients_is_a_fraction_below_one_or_seconds():
    from zodbshootout.cli.numbers import RestartAt

    at = RestartAt(604_800)
    assert at("0.5") == ("fraction", 0.5)
    assert at("30") == ("seconds", 30.0)
    assert at("10m") == ("seconds", 600.0)
    for bad in ("0", "-0.5", "nan", "soon"):
        with pytest.raises(argparse.ArgumentTypeError):
            at(bad)

"""The pieces every parser of the command line shares: usage errors, --aggregate, --format.

A usage error is one line and our exception (:class:`Parser`); --format
offers every format of the registry (:mod:`zodbshootout.render.formats`),
the subcommand's default first, so that a new format reaches every
subcommand without touching it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn

from zodbshootout.cli.numbers import RTT_HELP, RTT_LADDER, Number
from zodbshootout.errors import UsageError
from zodbshootout.outputfile import written_name
from zodbshootout.render.formats import format_names
from zodbshootout.results.stats import AGGREGATES

#: Options whose value may begin with a minus sign (a negative delay, to be
#: refused with its reason): argparse would take ``-1ms`` for an option.
SIGNED_VALUES = ("--rtt",)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and our exception."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        """``--rtt -1ms`` read as ``--rtt=-1ms``, so that its value is refused for what it is."""
        if args is not None:
            args = _bind_signed_values(list(args))
        return super().parse_known_args(args, namespace)


def _bind_signed_values(argv: list[str]) -> list[str]:
    bound: list[str] = []
    skip = False
    for index, word in enumerate(argv):
        if skip:
            skip = False
            continue
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if word in SIGNED_VALUES and following[:1] == "-" and following[1:2] in "0123456789.":
            bound.append(f"{word}={following}")
            skip = True
        else:
            bound.append(word)
    return bound


#: The largest slowdown a gate takes, in percent: 100% slower is twice as
#: slow, so 10,000% is a hundredfold, more than any gate needs.
MAX_PERCENT = 10_000.0
#: A percentage of at least 0 (``5`` or ``5%``), e.g. --fail-if-slower.
percent = Number(float, 0, MAX_PERCENT, "percent", suffix="%")


class Option(NamedTuple):
    """An option of a table that :func:`add_options` adds."""

    flags: tuple[str, ...]
    parse: Callable[[str], Any]
    default: Any
    #: --help; ``{default}`` there is the default, ``{NAME}`` a value add_options is given.
    help: str
    metavar: str | None = None  # None: argparse's own (the option's name in capitals)


def add_options(parser: argparse.ArgumentParser, options: Iterable[Option], **values: Any) -> None:
    """Each of *options*, its --help filled in with its default and *values*."""
    for option in options:
        parser.add_argument(
            *option.flags,
            type=option.parse,
            default=option.default,
            metavar=option.metavar,
            help=option.help.format(default=option.default, **values),
        )


def add_files(parser: argparse.ArgumentParser, name: str, metavar: str, help: str) -> None:
    """The files (or directories) a subcommand reads: one or more."""
    parser.add_argument(name, metavar=metavar, nargs="+", help=help)


def add_output(
    parser: argparse.ArgumentParser, metavar: str, help: str, required: bool = False
) -> None:
    """-o/--output: where to write (refused at once when it names what must not be written)."""
    parser.add_argument(
        "-o", "--output", type=written_name, metavar=metavar, required=required, help=help
    )


def add_aggregate(parser: argparse.ArgumentParser, whose: str = "the run") -> None:
    """--aggregate of a subcommand on saved runs: by default, what *whose* used."""
    parser.add_argument(
        "--aggregate",
        choices=AGGREGATES,
        default=None,
        help=f"combine repetitions by mean or best (default: what {whose} used)",
    )


def choice_list(
    names: list[str], notes: Mapping[str, str] | None = None, last: str = " or "
) -> str:
    """``table (aligned text, default), markdown, csv or json``: *names* with their *notes*."""
    notes = notes or {}
    items = [f"{name} ({notes[name]})" if name in notes else name for name in names]
    if len(items) < 2:
        return "".join(items)
    return ", ".join(items[:-1]) + last + items[-1]


def add_format(
    parser: argparse.ArgumentParser,
    default: str,
    notes: Mapping[str, str],
    *,
    last: str = " or ",
    prefix: str = "",
    saved: bool = False,
) -> None:
    """--format: every registered format, *default* first, each with its *notes* in --help.

    *saved*: the subcommand prints a saved run, by default in the format the
    run printed (its --help says so; *default* only orders the choices).
    """
    names = format_names(default)
    described = prefix + choice_list(names, notes, last)
    if saved:
        described += " (default: what the run printed)"
    parser.add_argument(
        "--format", choices=names, default=None if saved else default, help=described
    )


def add_hosts_and_rtt(parser: argparse.ArgumentParser, where: str) -> None:
    """``--hosts`` (*where*: what runs there) and ``--rtt``, as the run and mix share them."""
    parser.add_argument(
        "--hosts",
        metavar="HOSTS|FILE",
        help=f"{where}, over ssh with execnet: localhost, h1,h2 or h1=2,h2=3 (shares of the "
        "workers), or a file of lines 'HOST [SHARE] [python=PATH]' (see docs/hosts.rst)",
    )
    parser.add_argument("--rtt", metavar="LADDER", type=RTT_LADDER, default=(), help=RTT_HELP)

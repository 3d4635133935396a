"""Every command-line argument of zodbshootout, defined once: the run's and the subcommands'.

Two parsers share this module:

- the run, ``zodbshootout CONFIG [PHASE...] [options]``, as it has always
  been (:func:`build_parser`);
- the subcommands on saved runs and cache traces, ``zodbshootout
  show|compare|plot|export|history|cachesim ...``, argparse subparsers of one
  parser (:func:`build_subcommand_parser`).

A first word that names a subcommand selects it; a configuration file with
such a name is run by writing it as a path (``zodbshootout ./show``).  The
choices and defaults come from the modules that own them (phases, options,
statistics, concurrency modes, workload, renderers), so they can't drift
apart from what the run accepts.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import NoReturn

from zodbshootout import cachesim
from zodbshootout.concurrency import SHARED, SHARINGS
from zodbshootout.config import DATA_DIR_VARIABLE
from zodbshootout.errors import UsageError
from zodbshootout.options import RunOptions
from zodbshootout.phases import ALL_PHASES, PHASES
from zodbshootout.precision import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MIN_REPETITIONS,
    DEFAULT_PRECISION_PERCENT,
)
from zodbshootout.render.formats import COMPARISON_FORMATS, FORMATS
from zodbshootout.stats import AGGREGATES
from zodbshootout.workload import CONTAINER_KINDS, DEFAULT_BTREE_KIND

#: The options a run has when none are given.
DEFAULTS = RunOptions()

#: Each subcommand and what it does (its --help description starts with this).
SUBCOMMAND_SUMMARIES = {
    "show": "Print the table of a saved run (-o) again, in any format, or its metadata.",
    "compare": "Compare saved runs cell by cell with the first (the base): rates, ratio, "
    "whether the difference is significant (Welch's t-test, Holm-corrected), and a "
    "geometric-mean summary; --fail-if-slower turns a slowdown into exit code 1.",
    "plot": "Draw saved runs: one run as a bar chart per phase and database; two runs "
    "as a comparison chart; a directory of runs (--save-to) or three or more as a "
    "history: rate over runs with each run's confidence interval.",
    "export": "Write a saved run as a pyperf benchmark suite (for pyperf compare_to, stats, hist).",
    "history": "Print a table of saved runs (a --save-to directory or files): one row "
    "per cell, one column per run, values in objects per second.",
    "cachesim": cachesim.DESCRIPTION,
}
SUBCOMMANDS = tuple(SUBCOMMAND_SUMMARIES)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and our exception."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _positive_ints(text: str) -> list[int]:
    """Parse ``100,1000`` into [100, 1000]; the values are checked by RunOptions."""
    values = []
    for part in text.split(","):
        part = part.strip()
        try:
            values.append(int(part))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a whole number") from None
    return values


def _percent(text: str) -> float:
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None
    if not value >= 0.0:  # 100% slower is twice as slow, so no upper bound
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage of at least 0")
    return value


# Options whose value is optional, and the value they mean without one.
_OPTIONAL_VALUES = {"--threads": SHARED, "--btrees": DEFAULT_BTREE_KIND}


def bind_optional_values(argv: Sequence[str]) -> list[str]:
    """Keep ``--threads cold`` from reading "cold" as the value of --threads.

    argparse gives an option with an optional value the next word whatever
    it is.  A phase name or an existing file (the CONFIG) after the option
    stays positional; any other word is still the option's value, so a typo
    like ``--threads privat`` is reported against --threads.
    """
    bound: list[str] = []
    for index, word in enumerate(argv):
        implied = _OPTIONAL_VALUES.get(word)
        following = argv[index + 1] if index + 1 < len(argv) else None
        if implied and following is not None and _positional(following):
            word = f"{word}={implied}"
        bound.append(word)
    return bound


def _positional(word: str) -> bool:
    return word in ALL_PHASES or word == "all" or os.path.isfile(word)


# --- The run -----------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The run's parser: ``zodbshootout CONFIG [PHASE...] [options]``."""
    subcommands = ",".join(SUBCOMMANDS)
    parser = _Parser(
        prog="zodbshootout",
        description=(
            "Measure how many objects per second each ZODB database in CONFIG adds, "
            "updates and reads, with several worker processes at once."
        ),
        epilog=(
            f"Phases: {', '.join(PHASES)} (the default); extra benchmarks: "
            f"{', '.join(ALL_PHASES[len(PHASES) :])}; 'all' selects everything. "
            f"Embedded databases keep their files in "
            f"${DATA_DIR_VARIABLE} (default: a temporary directory removed after the run). "
            f"Saved runs (-o, --save-to): zodbshootout {{{subcommands}}} ..., each with "
            "its own --help. A CONFIG named like a subcommand runs as a path: ./show."
        ),
    )
    parser.add_argument("config", metavar="CONFIG", help="ZConfig file of <zodb NAME> sections")
    parser.add_argument(
        "phases", metavar="PHASE", nargs="*", help="measure only these phases (default: all)"
    )
    parser.add_argument(
        "-n",
        "--object-counts",
        metavar="N[,N...]",
        type=_positive_ints,
        action="append",
        help="objects each worker writes and reads per transaction "
        f"(default: {','.join(map(str, DEFAULTS.object_counts))})",
    )
    parser.add_argument(
        "-c",
        "--concurrency",
        metavar="C[,C...]",
        type=_positive_ints,
        action="append",
        help="workers (processes, or threads with --threads) that run each phase at once "
        f"(default: {','.join(map(str, DEFAULTS.concurrencies))})",
    )
    parser.add_argument(
        "-r",
        "--repetitions",
        metavar="R",
        type=int,
        default=None,
        help="measure each cell exactly R times (the classic rule); with --precision, "
        f"at least R times (default: at least {DEFAULT_MIN_REPETITIONS}, then as --precision says)",
    )
    parser.add_argument(
        "--precision",
        metavar="PCT",
        type=float,
        default=None,
        help="add repetitions until every cell's 95%% confidence interval is within ±PCT%% "
        f"of its mean, or --max-time runs out (default: {DEFAULT_PRECISION_PERCENT:g}, "
        "unless -r is given)",
    )
    parser.add_argument(
        "--max-time",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_MAX_SECONDS,
        help="with --precision: stop adding repetitions after this long per object count "
        f"and concurrency level, warm-up included (default: {DEFAULT_MAX_SECONDS:g})",
    )
    parser.add_argument(
        "--aggregate",
        choices=AGGREGATES,
        default=DEFAULTS.aggregate,
        help="combine repetitions by their mean rate (default) or keep the fastest (min)",
    )
    parser.add_argument(
        "-s",
        "--object-size",
        metavar="BYTES",
        type=int,
        default=DEFAULTS.object_size_bytes,
        help=f"payload bytes per object (default: {DEFAULTS.object_size_bytes})",
    )
    parser.add_argument(
        "-p",
        "--profile",
        metavar="DIR",
        help="write a cProfile .prof and a sorted .txt per database, phase, worker, repetition",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=DEFAULTS.timeout_seconds,
        help="give up on a stage whose workers take longer than this "
        f"(default: {DEFAULTS.timeout_seconds:g})",
    )
    _add_output_arguments(parser)
    _add_state_arguments(parser)
    _add_mode_arguments(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="after the table, describe each database on stderr: server, driver, versions, "
        "history mode, caches, round-trip latency",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    from zodbshootout import __version__

    parser.add_argument("--version", action="version", version=f"zodbshootout {__version__}")
    return parser


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """The run's options for what it writes: -o, --save-to, --label, --format, --pyperf."""
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE.json",
        help="save every raw timing and the run's metadata to FILE.json after each "
        "database ('-': stdout instead of the table); see 'zodbshootout show'",
    )
    parser.add_argument(
        "--save-to",
        metavar="DIR",
        help="also save the run in DIR under a name made of its start time and label, "
        "to build a history (see 'zodbshootout history DIR')",
    )
    parser.add_argument(
        "--label",
        metavar="TEXT",
        help="a name for this run, recorded in its metadata and shown by show, compare, "
        "history and plot (e.g. a branch or a version)",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=FORMATS[0],
        help="how to print the table: csv (classic, default), markdown, json, "
        "table (for a terminal, with spread)",
    )
    parser.add_argument(
        "--pyperf",
        metavar="FILE.json",
        help="also write the run as a pyperf benchmark suite (pyperf compare_to, hist)",
    )


def _add_state_arguments(parser: argparse.ArgumentParser) -> None:
    """Options for the database's state and for diagnostics (dbstate, diagnostics)."""
    parser.add_argument(
        "--min-objects",
        metavar="N",
        type=int,
        default=DEFAULTS.min_objects,
        help="keep at least N other objects in each database (written once, untimed, "
        "under the tool's root key), to measure how the storage scales",
    )
    parser.add_argument(
        "--pack",
        action="store_true",
        help="pack each database before measuring it (untimed)",
    )
    parser.add_argument(
        "--zap",
        metavar="force|NAME,...",
        nargs="?",
        const="",
        default=None,
        help="ERASE ALL DATA of the databases first: --zap asks for each database, "
        "--zap a,b asks for a and b only, --zap force erases all without asking, "
        "--zap force,a erases a without asking; any answer but y or yes means no. "
        "It takes the next word as its value: put it last or write --zap=VALUE",
    )
    parser.add_argument(
        "--leaks",
        action="store_true",
        help="report how many objects (by type) each phase left behind in the workers",
    )
    parser.add_argument(
        "--log",
        metavar="LEVEL|FILE.conf",
        help="log storages' messages in the runner and the workers: a level (e.g. DEBUG) "
        "to stderr, or a ZConfig file of <eventlog>/<logger> sections",
    )


def _add_mode_arguments(parser: argparse.ArgumentParser) -> None:
    """Options for how workers run and what they store (concurrency, workload, blobs)."""
    parser.add_argument(
        "--threads",
        nargs="?",
        const=SHARED,
        choices=SHARINGS,
        default=None,
        help="run the workers as threads of one process instead of processes: one DB "
        f"shared by all threads ({SHARED}, the default) or one DB per thread "
        f"({', '.join(s for s in SHARINGS if s != SHARED)})",
    )
    parser.add_argument(
        "--gevent",
        action="store_true",
        help="run the workers as gevent greenlets in one monkey-patched child process "
        "(implies --threads; needs the gevent extra and a gevent-compatible driver)",
    )
    parser.add_argument(
        "--btrees",
        nargs="?",
        const=DEFAULT_BTREE_KIND,
        choices=CONTAINER_KINDS,
        default=None,
        help="keep each worker's objects in a BTree (IOBTree by default, or OOBTree) "
        "instead of a PersistentMapping",
    )
    parser.add_argument(
        "--blobs",
        action="store_true",
        help="store each object as a ZODB blob and read its file back (needs blob-dir "
        "in the storage section, see etc/blobs.conf)",
    )
    parser.add_argument(
        "--index-entries",
        metavar="K",
        type=int,
        default=DEFAULTS.index_entries,
        help="keep K BTree index entries per object (OOBTrees of derived keys), written in "
        "the same transaction as add and update; the table adds index keys/s "
        "(the container entry plus K per object)",
    )
    parser.add_argument(
        "--cache-trace",
        metavar="DIR",
        help="write ZEO's and RelStorage's own client-cache traces to DIR, one per worker "
        "process and stage (rates then include the tracing); replay them at other cache "
        "sizes with 'zodbshootout cachesim DIR'",
    )


# --- The subcommands -------------------------------------------------------------


def build_subcommand_parser() -> argparse.ArgumentParser:
    """``zodbshootout SUBCOMMAND ...``: one subparser per subcommand, chosen by ``command``."""
    parser = _Parser(prog="zodbshootout", description="Work with saved runs.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="SUBCOMMAND")

    def add(name: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name, description=SUBCOMMAND_SUMMARIES[name], help=SUBCOMMAND_SUMMARIES[name]
        )
        assert isinstance(sub, _Parser)
        return sub

    show = add("show")
    show.add_argument("result", metavar="RESULT.json", help="a file saved with -o or --save-to")
    show.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help=f"{', '.join(FORMATS)} (default: what the run printed)",
    )
    show.add_argument(
        "--metadata",
        action="store_true",
        help="print where and how the run was measured (label, date, machine, versions, "
        "options) instead of the table",
    )
    _add_aggregate(show)

    compare = add("compare")
    compare.add_argument("base", metavar="BASE.json", help="the run to compare against")
    compare.add_argument(
        "changed",
        metavar="CHANGED.json",
        nargs="+",
        help="one or more runs with the change, each compared with BASE.json",
    )
    compare.add_argument(
        "--format",
        choices=COMPARISON_FORMATS,
        default=COMPARISON_FORMATS[0],
        help="table (aligned text, default), markdown (for pull requests), csv or json",
    )
    compare.add_argument(
        "--fail-if-slower",
        metavar="PCT",
        type=_percent,
        default=None,
        help="exit with code 1 when a cell is significantly slower (after the Holm "
        "correction) by more than PCT percent, and name those cells",
    )
    _add_aggregate(compare, "the base run")

    plot = add("plot")
    plot.add_argument(
        "results",
        metavar="RESULT.json",
        nargs="+",
        help="one saved run, two (BASE.json CHANGED.json) for a comparison chart, or a "
        "directory or three or more for a history",
    )
    plot.add_argument(
        "-o",
        "--output",
        metavar="FILE.png",
        required=True,
        help="where to write the chart (.png, .svg, .pdf)",
    )
    _add_aggregate(plot)

    export = add("export")
    export.add_argument("result", metavar="RESULT.json", help="a file saved with -o or --save-to")
    export.add_argument(
        "-o",
        "--output",
        metavar="FILE.json",
        required=True,
        help="where to write the pyperf suite ('-': stdout)",
    )

    history = add("history")
    history.add_argument(
        "runs",
        metavar="DIR|RESULT.json",
        nargs="+",
        help="a directory of saved runs (--save-to), or result files, ordered by start time",
    )
    history.add_argument(
        "--format",
        choices=COMPARISON_FORMATS,
        default=COMPARISON_FORMATS[0],
        help="table (aligned text, default), markdown, csv or json",
    )
    _add_aggregate(history, "the newest run")

    cachesim.add_arguments(add("cachesim"))

    quiet_help = {
        "show": "don't repeat the warning about noisy cells",
        "plot": "no warnings, and don't say which file was written",
    }
    for name, sub in commands.choices.items():
        sub.add_argument(
            "-q", "--quiet", action="store_true", help=quiet_help.get(name, "no warnings on stderr")
        )
        sub.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    return parser


def _add_aggregate(parser: argparse.ArgumentParser, whose: str = "the run") -> None:
    parser.add_argument(
        "--aggregate",
        choices=AGGREGATES,
        default=None,
        help=f"combine repetitions by mean or best (default: what {whose} used)",
    )

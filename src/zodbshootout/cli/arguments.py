"""Every command-line argument of a run: ``zodbshootout CONFIG [PHASE...] [options]``.

The subcommands (``zodbshootout show|compare|plot|export|history|cachesim|
mix|report ...``) have their parsers in their modules,
:mod:`zodbshootout.cli.commands`, which import nothing of the run machinery
(so ``show`` loads no ZODB).

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

from zodbshootout.cli.commands import COMMANDS
from zodbshootout.cli.numbers import (
    CONCURRENCY,
    OBJECT_SIZE,
    TIMEOUT,
    Number,
    Numbers,
)
from zodbshootout.cli.parsing import Parser, add_format, add_hosts_and_rtt, add_output
from zodbshootout.concurrency import SHARED, SHARINGS, UNIQUE
from zodbshootout.config.loader import DATA_DIR_VARIABLE
from zodbshootout.options.run import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MIN_REPETITIONS,
    DEFAULT_PRECISION_PERCENT,
    RunOptions,
)
from zodbshootout.outputfile import written_name
from zodbshootout.phases.classic import ALL_PHASES, PHASES
from zodbshootout.results.stats import AGGREGATES
from zodbshootout.workload.containers import CONTAINER_KINDS, DEFAULT_BTREE_KIND
from zodbshootout.workload.limits import (
    MAX_INDEX_ENTRIES,
    MAX_MIN_OBJECTS,
    MAX_OBJECT_COUNT,
    MAX_REPETITIONS,
    MAX_TIMEOUT_SECONDS,
)

#: The options a run has when none are given.
DEFAULTS = RunOptions()

#: The subcommands: a first word that is one of them is no run's CONFIG.
SUBCOMMANDS = tuple(COMMANDS)


#: The run's numbers and their ranges (see zodbshootout.workload.limits).
OBJECT_COUNTS = Numbers(Number(int, 1, MAX_OBJECT_COUNT))
CONCURRENCIES = Numbers(CONCURRENCY)
REPETITIONS = Number(int, 1, MAX_REPETITIONS)
PRECISION = Number(float, 0, 100, "percent", above=True, below=True)
MAX_TIME = Number(float, 0, MAX_TIMEOUT_SECONDS, "seconds", above=True)
MIN_OBJECTS = Number(int, 0, MAX_MIN_OBJECTS)
INDEX_ENTRIES = Number(int, 0, MAX_INDEX_ENTRIES)


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
    parser = Parser(
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
        type=OBJECT_COUNTS,
        action="append",
        help="objects each worker writes and reads per transaction "
        f"(default: {','.join(map(str, DEFAULTS.object_counts))})",
    )
    parser.add_argument(
        "-c",
        "--concurrency",
        metavar="C[,C...]",
        type=CONCURRENCIES,
        action="append",
        help="workers (processes, or threads with --threads) that run each phase at once "
        f"(default: {','.join(map(str, DEFAULTS.concurrencies))})",
    )
    parser.add_argument(
        "-r",
        "--repetitions",
        metavar="R",
        type=REPETITIONS,
        default=None,
        help="measure each cell exactly R times (the classic rule); with --precision, "
        f"at least R times (default: at least {DEFAULT_MIN_REPETITIONS}, then as --precision says)",
    )
    parser.add_argument(
        "--precision",
        metavar="PCT",
        type=PRECISION,
        default=None,
        help="add repetitions until every cell's 95%% confidence interval is within ±PCT%% "
        f"of its mean, or --max-time runs out (default: {DEFAULT_PRECISION_PERCENT:g}, "
        "unless -r is given)",
    )
    parser.add_argument(
        "--max-time",
        metavar="SECONDS",
        type=MAX_TIME,
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
        type=OBJECT_SIZE,
        default=DEFAULTS.object_size_bytes,
        help=f"payload bytes per object (default: {DEFAULTS.object_size_bytes})",
    )
    parser.add_argument(
        "-p",
        "--profile",
        type=written_name,
        metavar="DIR",
        help="write a cProfile .prof and a sorted .txt per database, phase, worker, repetition",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=TIMEOUT,
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
    add_output(
        parser,
        "FILE.json",
        "save every raw timing and the run's metadata to FILE.json after each "
        "database ('-': stdout instead of the table); see 'zodbshootout show'",
    )
    parser.add_argument(
        "--save-to",
        type=written_name,
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
    add_format(
        parser,
        "csv",
        {"csv": "classic, default", "table": "for a terminal, with spread"},
        last=", ",
        prefix="how to print the table: ",
    )
    parser.add_argument(
        "--pyperf",
        type=written_name,
        metavar="FILE.json",
        help="also write the run as a pyperf benchmark suite (pyperf compare_to, hist)",
    )


def _add_state_arguments(parser: argparse.ArgumentParser) -> None:
    """Options for the database's state and for diagnostics (dbstate, diagnostics)."""
    parser.add_argument(
        "--min-objects",
        metavar="N",
        type=MIN_OBJECTS,
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
        "--counters",
        action="store_true",
        help="also count, per phase, the loads sent to a ZEO or SQL server and RelStorage's "
        "SQL statements: a Python call per load or statement inside the timed region, so "
        "the rates are a little lower (diagnostics; recorded in the result file)",
    )
    parser.add_argument(
        "--work",
        action="store_true",
        help="count, per phase, the work per transaction and object (loads, prefetches, "
        "stores, round trips to the server, state bytes, polls) in the untimed warm-up "
        "repetition, so the timed ones pay nothing; shown under the rates and saved",
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
        f"({UNIQUE})",
    )
    parser.add_argument(
        "--gevent",
        action="store_true",
        help="run the workers as gevent greenlets in one monkey-patched child process "
        "(implies --threads; needs the gevent extra and a gevent-compatible driver)",
    )
    add_hosts_and_rtt(parser, "run each stage's worker processes on these client hosts")
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
        type=INDEX_ENTRIES,
        default=DEFAULTS.index_entries,
        help="keep K BTree index entries per object (OOBTrees of derived keys), written in "
        "the same transaction as add and update; the table adds index keys/s "
        "(the container entry plus K per object)",
    )
    parser.add_argument(
        "--cache-trace",
        type=written_name,
        metavar="DIR",
        help="write ZEO's and RelStorage's own client-cache traces to DIR, one per worker "
        "process and stage (rates then include the tracing); replay them at other cache "
        "sizes with 'zodbshootout cachesim DIR'",
    )


__all__ = ["DEFAULTS", "SUBCOMMANDS", "bind_optional_values", "build_parser"]

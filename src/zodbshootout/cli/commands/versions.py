"""``zodbshootout versions``: one configuration measured across package versions.

::

    zodbshootout versions etc/local.conf --with 'ZEO==6.1' --with 'ZEO==6.2' -- -n 100 -r 2
    zodbshootout versions etc/local.conf --mix --with ... -- --duration 10
    zodbshootout versions --with ... -- mix etc/local.conf --duration 10
    zodbshootout versions --clear-cache

Its own arguments come before ``--``; what follows (``args.passed``: the
subcommand runner keeps it apart for a command that ``passes_on``) is given
to every run as written, after CONFIG, or as the whole command when CONFIG
is left out.
The machinery is :mod:`zodbshootout.versions`; this module parses, reports
progress on stderr, saves the versions file, and prints the variants and
their comparison (``compare``'s own code, so the gate is the same).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import random
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from zodbshootout.cli.commands import Command
from zodbshootout.cli.commands.compare import (
    VARIANT_FACTS,
    add_only_significant,
    add_work_gate,
    compare_runs,
)
from zodbshootout.cli.numbers import SEED, Number
from zodbshootout.cli.parsing import add_aggregate, add_format, percent
from zodbshootout.cli.say import emit, emit_lines
from zodbshootout.errors import EXIT_CELLS_FAILED, EXIT_OK, EXIT_SIGINT, UsageError
from zodbshootout.outputfile import check_output_target, written_name
from zodbshootout.render.versions import format_variants
from zodbshootout.results import versions as versions_file
from zodbshootout.results.versions import VariantRecord, VersionsResult
from zodbshootout.versions import cache
from zodbshootout.versions.combine import combine_rounds
from zodbshootout.versions.environments import BuildError, Environment, prepare
from zodbshootout.versions.installers import INSTALLERS, choose_installer
from zodbshootout.versions.interpreter import Interpreter, find_interpreter
from zodbshootout.versions.rounds import Rounds, Terminated, check_command, run_rounds
from zodbshootout.versions.schedule import ORDERS
from zodbshootout.versions.variants import name_variants, variants_from_options

#: Rounds when --rounds is not given: even, so that each variant is first as often as last.
DEFAULT_ROUNDS = 4


#: --rounds: runs of each variant; more add nothing to the statistics, only hours.
MAX_ROUNDS = 1000
ROUNDS = Number(int, 1, MAX_ROUNDS)


DESCRIPTION = (
    "Measure one configuration with several versions of its packages (or Pythons): one "
    "cached environment per variant, runs interleaved in rounds, the variants compared as "
    "compare does. Its own arguments come first; the words after -- are given to every "
    "run: after CONFIG, or as the whole command when CONFIG is left out (-- mix CONFIG ...)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``zodbshootout versions`` (before ``--``)."""
    parser.add_argument("config", metavar="CONFIG", nargs="?", help="the ZConfig file to run")
    parser.add_argument(
        "--with",
        dest="withs",
        action="append",
        default=[],
        metavar="[NAME=]REQ[,REQ...]",
        help="a variant: one or more requirements (ZEO==6.2, 'RelStorage @ ../pr') "
        "installed over zodbshootout's own; once per variant, the first is the base",
    )
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        metavar="PYTHON",
        help="the Python of the variants: once for all, once per --with (in order), or "
        "alone, once per variant (default: the Python running zodbshootout)",
    )
    parser.add_argument(
        "--mix", action="store_true", help="measure zodbshootout mix CONFIG instead of a run"
    )
    parser.add_argument(
        "--rounds",
        type=ROUNDS,
        default=DEFAULT_ROUNDS,
        help=f"runs of each variant, interleaved (default {DEFAULT_ROUNDS})",
    )
    parser.add_argument(
        "--order",
        choices=ORDERS,
        default=ORDERS[0],
        help="each round's order: alternate (forward, then reversed; default) or shuffle",
    )
    parser.add_argument("--seed", type=SEED, help="the seed of --order shuffle (default: random)")
    parser.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="EXTRA",
        help="an extra of zodbshootout to install in every environment (postgresql, "
        "mysql, memcache, all: the drivers CONFIG needs)",
    )
    parser.add_argument(
        "--installer",
        choices=INSTALLERS,
        default=INSTALLERS[0],
        help="what builds the environments: uv, pip (venv + pip), or auto (default): uv "
        "when it is on PATH",
    )
    parser.add_argument(
        "--cache-dir",
        metavar="DIR",
        help=f"where environments are kept (default: ${cache.CACHE_VARIABLE}, else "
        "$XDG_CACHE_HOME/zodbshootout, else ~/.cache/zodbshootout)",
    )
    parser.add_argument(
        "--rebuild", action="store_true", help="build the variants' environments again"
    )
    parser.add_argument(
        "--clear-cache",
        action="store_true",
        help="remove every cached environment, and do nothing else",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=written_name,
        metavar="FILE.json",
        help="save the variants and their runs ('zodbshootout compare FILE.json')",
    )
    add_format(
        parser,
        "table",
        {"table": "aligned text, default", "markdown": "for pull requests"},
        prefix="the variants and their comparison as ",
    )
    parser.add_argument(
        "--fail-if-slower",
        metavar="PCT",
        type=percent,
        help="exit 1 when a variant is significantly slower than the first by more than "
        "PCT percent, 3 when some cell could not have shown it (as compare does)",
    )
    add_work_gate(parser)
    add_only_significant(parser)
    add_aggregate(parser, "the runs")


def run_command(args: argparse.Namespace, passed: list[str]) -> list[str]:
    """The arguments every round gives ``python -m zodbshootout``."""
    if args.config is None:
        if not passed:
            raise UsageError(
                "name the configuration: zodbshootout versions CONFIG --with ... --with ..."
            )
        command = ["mix", *passed] if args.mix else passed
    else:
        if not os.path.isfile(args.config):
            raise UsageError(f"{args.config}: no such configuration file")
        command = ["mix", args.config, *passed] if args.mix else [args.config, *passed]
    check_command(command)
    return command


def run(args: argparse.Namespace) -> int:
    """``zodbshootout versions ...``; the exit code."""
    if args.clear_cache:
        return _clear(args)
    try:
        return _versions(args, args.passed)
    except BuildError as e:
        if args.debug and e.output:
            emit_lines(e.output, sys.stderr)
        raise


def _say(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        emit(f"zodbshootout versions: {message}", sys.stderr)


def _clear(args: argparse.Namespace) -> int:
    top = cache.cache_directory(args.cache_dir)
    removed = cache.clear(top)
    _say(args, f"removed {len(removed)} environment(s) from {cache.environments_directory(top)}")
    return EXIT_OK


def _environments(args: argparse.Namespace) -> list[Environment]:
    """Every variant's environment, found in the cache or built (in the variants' order)."""
    variants = variants_from_options(args.withs, args.python)
    interpreters: dict[str | None, Interpreter] = {}
    for variant in variants:
        if variant.python not in interpreters:
            interpreters[variant.python] = find_interpreter(variant.python)
    variants = name_variants(variants, [interpreters[v.python].version for v in variants])
    installer = choose_installer(args.installer)
    top = cache.cache_directory(args.cache_dir)
    _say(args, f"environments by {installer.name}, in {cache.environments_directory(top)}")
    return [
        prepare(
            variant,
            interpreters[variant.python],
            installer,
            top,
            tuple(args.extra),
            args.rebuild,
            lambda message: _say(args, message),
        )
        for variant in variants
    ]


def _versions(args: argparse.Namespace, passed: list[str]) -> int:
    command = run_command(args, passed)
    if args.output:
        check_output_target(args.output)
    environments = _environments(args)
    seed = args.seed
    if args.order == "shuffle" and seed is None:
        seed = random.SystemRandom().randrange(2**32)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="zodbshootout-versions-") as scratch, _sigterm():
        rounds = run_rounds(
            environments,
            command,
            pathlib.Path(scratch),
            args.rounds,
            args.order,
            seed,
            lambda message: _say(args, message),
        )
    versions = VersionsResult(
        command, args.order, seed, args.rounds, _variant_records(environments, rounds),
        rounds.records, started, time.time(), rounds.interrupted is not None,
    )  # fmt: skip
    if args.output:
        versions_file.save(versions, args.output)
        _say(args, f"wrote {args.output}")
    return _report(args, versions, rounds)


def _variant_records(environments: list[Environment], rounds: Rounds) -> list[VariantRecord]:
    """The file's record of each variant that ran at least one round."""
    records = []
    for environment in environments:
        results = rounds.results.get(environment.variant.name or "")
        if not results:
            continue
        interpreter = environment.interpreter
        records.append(
            VariantRecord(
                name=environment.variant.name or "",
                requirements=list(environment.variant.requirements),
                python={
                    "requested": interpreter.requested,
                    "executable": interpreter.executable,
                    "version": interpreter.version,
                    "implementation": interpreter.implementation,
                },
                installer=environment.installer,
                environment={
                    "key": environment.key,
                    "path": str(environment.directory),
                    "built": environment.built,
                    "build_seconds": environment.build_seconds,
                },
                packages=environment.packages,
                result=combine_rounds(results),
            )
        )
    return records


def _report(args: argparse.Namespace, versions: VersionsResult, rounds: Rounds) -> int:
    """Print the variants and their comparison; the exit code."""
    if len(versions.variants) < 2:
        _say(args, "interrupted before every variant ran: nothing to compare")
        return rounds.interrupted or EXIT_SIGINT
    for line in format_variants(versions, args.format):
        emit(line)
    code = compare_runs(
        [v.result for v in versions.variants],
        [v.name for v in versions.variants],
        args,
        expected=VARIANT_FACTS,
    )
    if rounds.interrupted is not None:
        return rounds.interrupted
    if code == EXIT_OK and any(record.exit_code != 0 for record in versions.rounds):
        return EXIT_CELLS_FAILED  # some cells failed in some round (the table says which)
    return code


@contextlib.contextmanager
def _sigterm() -> Iterator[None]:
    """SIGTERM stops the rounds as Ctrl-C does (the running round saves what it has)."""

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


COMMAND = Command(
    description=DESCRIPTION,
    add_arguments=add_arguments,
    run=run,
    quiet_help="no progress on stderr",
    passes_on=True,
)

"""``zodbshootout mix CONFIG``: transactions of a workload for a duration, with latency percentiles.

The arguments (:func:`add_arguments`) and the handler (:func:`run`): options
→ :class:`zodbshootout.mix.runner.MixRunner` → the table on stdout, progress
and warnings on stderr, the result file with ``-o`` / ``--save-to`` (the
same format as a classic run's; ``show`` prints it again).
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import TYPE_CHECKING

from zodbshootout import errors, faults
from zodbshootout.cli.commands import Command
from zodbshootout.cli.numbers import (
    CONCURRENCY,
    OBJECT_SIZE,
    SEED,
    TIMEOUT,
    Number,
    Parsed,
    RestartAt,
    Seconds,
)
from zodbshootout.cli.parsing import Option, add_format, add_hosts_and_rtt, add_options, add_output
from zodbshootout.cli.running import exit_for_mode, run_mode, said_by, setup_failed
from zodbshootout.cli.say import emit
from zodbshootout.config.hosts import HostSpec, parse_hosts
from zodbshootout.errors import UsageError
from zodbshootout.mix.keys import ZIPFIAN_THETA
from zodbshootout.mix.schedule import (
    ARRIVALS,
    CONSTANT,
    MAX_RATE_PER_SECOND,
    MIN_RATE_PER_SECOND,
)
from zodbshootout.mix.workloads import (
    BUILTIN,
    DEFAULT_WORKLOAD,
    KEY_CHOOSERS,
    LATEST,
    MAX_WEIGHT,
    ZIPFIAN,
    Workload,
    checked_mix,
    choose_workload,
    transaction_objects,
)
from zodbshootout.options.run import DEFAULT_OBJECT_SIZE_BYTES
from zodbshootout.outputfile import written_name
from zodbshootout.results.histogram import require_hdrhistogram
from zodbshootout.results.record import RunResult
from zodbshootout.workload.limits import (
    MAX_MIN_OBJECTS,
    MAX_OBJECT_COUNT,
    MAX_TIMEOUT_SECONDS,
    MIN_TIMEOUT_SECONDS,
    Footprint,
    footprint_problems,
    physical_memory_bytes,
)

if TYPE_CHECKING:  # the runner imports ZODB: only a mix run loads it (see run)
    from zodbshootout.cli.outputs import RunOutputs
    from zodbshootout.mix.runner import MixOptions
    from zodbshootout.results.steady import SteadyRule

DESCRIPTION = (
    "Run a mixed workload (YCSB-like: reads, updates, inserts, scans, read-modify-write, "
    "readCurrent, polling) on every database of CONFIG for a duration and print "
    "throughput, latency percentiles (p50 … p99.9, max) and conflicts per operation; "
    "--rate runs an open-loop schedule whose latencies count from the intended start."
)

DEFAULT_OBJECTS = 100_000
DEFAULT_CONCURRENCY = 2
DEFAULT_DURATION_SECONDS = 30.0
DEFAULT_WARMUP_SECONDS = 5.0


#: -d: shorter, a run may end before its first transaction does, a table of zeros.
MIN_DURATION_SECONDS = 0.1
#: A worker's connection cache keeps this many objects (ZODB's default
#: cache-size) of the dataset it wanders over, besides its transaction's.
CONNECTION_CACHE_OBJECTS = 5000
#: --max-tries: a transaction that conflicts this often is not retried further.
MAX_TRIES = 1000
#: A count of objects a transaction touches (-k, --scan-length).
PER_TRANSACTION = Number(int, 1, MAX_OBJECT_COUNT)


#: The shortest --interval, in seconds: ten progress lines a second.  Shorter
#: ones told nothing more and flooded stderr and the result file (1e-9 never
#: ended a one-second run; 1e-5 saved 10 MB), so they are refused.
MIN_INTERVAL_SECONDS = 0.1
#: The most intervals a run may keep (--duration ÷ --interval): about 10 MB of result.
MAX_INTERVALS = 100_000


#: The most intervals a run keeps when --interval is not given: a 2-hour run keeps
#: 1 s intervals, a longer one coarser ones (bounded memory and result file).
SOAK_INTERVALS = 7_200
#: The most --idle-connections: ZODB's pool keeps 7 connections by default (pool-size)
#: and closes the oldest idle ones beyond its size.
MAX_IDLE_CONNECTIONS = 100
#: The shortest --checkpoint: a save a second at most.
MIN_CHECKPOINT_SECONDS = 1.0
DEFAULT_CHECKPOINT_SECONDS = 60.0


def interval_for(duration_seconds: float, interval_seconds: float | None) -> float:
    """--interval as given, else 1 s, or coarser so that at most SOAK_INTERVALS are kept."""
    if interval_seconds is not None:
        return interval_seconds
    return max(1.0, duration_seconds / SOAK_INTERVALS)


def _check_intervals(duration_seconds: float, interval_seconds: float) -> None:
    """Refuse a run that would keep more than :data:`MAX_INTERVALS` intervals."""
    if duration_seconds / interval_seconds > MAX_INTERVALS:
        raise UsageError(
            f"-d {duration_seconds:g} with --interval {interval_seconds:g} keeps more than "
            f"{MAX_INTERVALS:,} intervals; raise --interval to at least "
            f"{duration_seconds / MAX_INTERVALS:g}"
        )


#: The options of the dataset's and the run's size.
_SIZES = (
    Option(("-n", "--objects"), Number(int, 1, MAX_MIN_OBJECTS), DEFAULT_OBJECTS,
     "M, objects in the dataset (default {default})"),
    Option(("-s", "--object-size"), OBJECT_SIZE, DEFAULT_OBJECT_SIZE_BYTES,
     "payload bytes per object (default {default})"),
    Option(("-c", "--concurrency"), CONCURRENCY, DEFAULT_CONCURRENCY,
     "workers (default {default})"),
    Option(("-k", "--objects-per-transaction"), PER_TRANSACTION, 5,
     "K, objects a read, update, rmw or readcurrent touches (default {default})"),
    Option(("--scan-length",), PER_TRANSACTION, 50, "L, objects a scan reads (default {default})"),
    Option(("-d", "--duration"), Seconds(MIN_DURATION_SECONDS, MAX_TIMEOUT_SECONDS),
     DEFAULT_DURATION_SECONDS,
     f"measured seconds, at least {MIN_DURATION_SECONDS:g} (default {{default:g}})"),
    Option(("--warmup",), Number(float, 0, MAX_TIMEOUT_SECONDS, "seconds"), DEFAULT_WARMUP_SECONDS,
     "untimed seconds first (default {default:g})"),
)  # fmt: skip

#: The options of retries, choices and intervals, likewise.
_REPEATS = (
    Option(("--max-tries",), Number(int, 1, MAX_TRIES), 10,
     "attempts of a transaction that conflicts (default {default})"),
    Option(("--seed",), SEED, None,
     "seed of the key and operation choices (default: random; recorded)"),
    Option(("--interval",), Number(float, MIN_INTERVAL_SECONDS, MAX_TIMEOUT_SECONDS, "seconds"),
     None, "seconds per progress interval, at least {MIN_INTERVAL_SECONDS:g} (default 1, or "
     f"--duration ÷ {SOAK_INTERVALS:,} for longer runs)"),
    Option(("--checkpoint",), Seconds(MIN_CHECKPOINT_SECONDS, MAX_TIMEOUT_SECONDS),
     DEFAULT_CHECKPOINT_SECONDS,
     "with -o or --save-to: save the intervals closed so far every SECONDS while the run "
     "goes on, marked partial (default {default:g})"),
)  # fmt: skip


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``zodbshootout mix``."""
    parser.add_argument("config", metavar="CONFIG", help="the ZConfig file of the databases")
    workloads = ", ".join(f"{name} ({w.description})" for name, w in BUILTIN.items())
    parser.add_argument(
        "-w",
        "--workload",
        default=None,
        help=f"a built-in workload (default {DEFAULT_WORKLOAD}): {workloads}",
    )
    parser.add_argument(
        "--mix",
        metavar="OP=WEIGHT,...",
        type=Parsed(checked_mix, ("read={}", "read=1,update={}"), (str(MAX_WEIGHT * 2),), "mix"),
        help="a custom workload, e.g. read=50,update=50 (operations: read, update, insert, "
        "scan, rmw, readcurrent, poll)",
    )
    parser.add_argument(
        "--keys",
        choices=KEY_CHOOSERS,
        default=None,
        help=f"how keys are chosen (default: the workload's): zipfian ({ZIPFIAN_THETA}, "
        "scrambled), latest, uniform, hotspot",
    )
    add_options(parser, _SIZES)
    _add_schedule_arguments(parser)
    _add_soak_arguments(parser)
    _add_output_arguments(parser)


def _add_schedule_arguments(parser: argparse.ArgumentParser) -> None:
    """When transactions start, how often they retry, where the workers run."""
    parser.add_argument(
        "--rate",
        metavar="OPS",
        type=Number(float, MIN_RATE_PER_SECOND, MAX_RATE_PER_SECOND, "transactions per second"),
        default=None,
        help="open loop: OPS transactions per second across all workers, "
        "latency counted from each one's intended start (default: closed loop)",
    )
    parser.add_argument(
        "--arrival",
        choices=ARRIVALS,
        default=CONSTANT,
        help="with --rate: evenly spaced starts, or a Poisson process",
    )
    add_options(parser, _REPEATS, MIN_INTERVAL_SECONDS=MIN_INTERVAL_SECONDS)
    parser.add_argument(
        "--threads",
        action="store_true",
        help="workers are threads sharing one DB (default: processes)",
    )
    add_hosts_and_rtt(
        parser, "run the worker processes on these client hosts, as the classic run does"
    )
    parser.add_argument(
        "--work",
        action="store_true",
        help="after the run, untimed, count each operation's work per transaction (loads, "
        "server loads, round trips, stores, bytes, polls), cold and hot (docs/mix.rst)",
    )
    parser.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=TIMEOUT,
        default=300.0,
        help="seconds allowed on top of warm-up and duration, at least "
        f"{MIN_TIMEOUT_SECONDS:g} (default 300)",
    )


def _add_soak_arguments(parser: argparse.ArgumentParser) -> None:
    """A long run's own: --restart-clients, --until-steady and its --min-duration."""
    parser.add_argument(
        "--restart-clients",
        metavar="AT",
        type=RestartAt(MAX_TIMEOUT_SECONDS),
        default=None,
        help="stop the workers at AT (a fraction of --duration below 1, or seconds: 30, 10m) "
        "and start new worker processes (new connections and caches) for the rest; the "
        "intervals just before and after tell whether a decay lives in the client or the "
        "server (docs/soak.rst)",
    )
    parser.add_argument(
        "--idle-connections",
        metavar="N",
        type=Number(int, 0, MAX_IDLE_CONNECTIONS),
        default=0,
        help="each worker leaves N more connections idle in its database's connection pool "
        "for the whole run, as an application server's threads that went quiet do (on "
        "RelStorage they hold back the client's MVCC index: docs/soak.rst; default 0)",
    )
    parser.add_argument(
        "--until-steady",
        metavar="SLOPE",
        type=Number(float, 0, 100, "percent per second", above=True, suffix="%"),
        default=None,
        help="stop once the throughput's least-squares slope over the last --min-duration "
        "is at most SLOPE %% of its mean per second (fio's iops_slope), e.g. 0.5%%; "
        "--duration is then the maximum (docs/soak.rst)",
    )
    parser.add_argument(
        "--min-duration",
        metavar="SECONDS",
        type=Seconds(MIN_DURATION_SECONDS, MAX_TIMEOUT_SECONDS),
        default=None,
        help="with --until-steady: the shortest run, and the window the slope is fitted "
        "over (default: a quarter of --duration)",
    )


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    """What the run writes: -o, --save-to, --label, --format."""
    add_output(parser, "FILE.json", "save the result ('zodbshootout show' prints it again)")
    parser.add_argument(
        "--save-to", type=written_name, metavar="DIR", help="save the result in DIR too"
    )
    parser.add_argument("--label", help="a name for this run in compare and history")
    parser.add_argument(
        "--per-worker",
        action="store_true",
        help="a row per worker (host, tx/s, p99, committed transactions, share) under each "
        "database's operations; the fairness line and starved workers are shown always",
    )
    add_format(
        parser,
        "table",
        {
            "table": "aligned text, default",
            "csv": "one row per database and operation, plain numbers",
        },
    )


def mix_options(args: argparse.Namespace) -> MixOptions:
    """The run's options from its arguments; a bad value is a UsageError."""
    from zodbshootout.mix.operations import Shape
    from zodbshootout.mix.runner import MixOptions
    from zodbshootout.mix.worker import MixPlan

    workload = choose_workload(args.workload, args.mix, args.keys)
    interval = interval_for(args.duration, args.interval)
    _check_intervals(args.duration, interval)
    restart = _restart_seconds(args)
    steady = _steady_rule(args, interval)
    hosts: tuple[HostSpec, ...] = ()
    if args.work and args.threads:
        # Its counters wrap ZODB's classes in the process that counts: the threads' own.
        raise UsageError(
            "--work counts in a worker process of its own, which --threads doesn't start; "
            "run it without --threads"
        )
    if args.hosts:
        from zodbshootout.concurrency import THREADS, mode_of

        refused = mode_of(THREADS).refusal("hosts") if args.threads else None
        if refused:
            raise UsageError(refused)  # the classic run's words
        try:
            hosts = parse_hosts(args.hosts)
        except ValueError as e:
            raise UsageError(str(e)) from None
    problems = footprint_problems(mix_footprint(args, workload, hosts), physical_memory_bytes())
    if problems:
        raise UsageError(problems[0])
    seed = args.seed if args.seed is not None else random.randrange(1 << 31)
    shape = Shape(args.objects_per_transaction, args.scan_length, args.object_size)
    plan = MixPlan(
        workload, args.objects, shape, args.duration, args.warmup, seed, args.max_tries,
        rate_per_second=args.rate, arrival=args.arrival, interval_seconds=interval,
        idle_connections=args.idle_connections,
    )  # fmt: skip
    # The tests' fault hook (see faults); None in real runs.
    fault = faults.from_environment()
    return MixOptions(
        plan,
        args.concurrency,
        args.threads,
        args.timeout,
        hosts,
        fault,
        rtt=tuple(args.rtt),
        work=args.work,
        checkpoint_seconds=args.checkpoint,
        restart_at_seconds=restart,
        steady=steady,
    )


def _steady_rule(args: argparse.Namespace, interval: float) -> SteadyRule | None:
    """--until-steady's rule; a UsageError where it can't apply."""
    from zodbshootout.results.steady import MIN_WINDOW_INTERVALS, SteadyRule

    if args.until_steady is None:
        if args.min_duration is not None:
            raise UsageError("--min-duration goes with --until-steady")
        return None
    for other, given in (("--restart-clients", args.restart_clients), ("--hosts", args.hosts)):
        if given:
            # The workers hear "stop" through a file: a local one, in one stage.
            raise UsageError(f"--until-steady can't be combined with {other}")
    window = args.min_duration if args.min_duration is not None else args.duration / 4
    if window < MIN_WINDOW_INTERVALS * interval or window >= args.duration:
        raise UsageError(
            f"--min-duration {window:g} s must hold at least {MIN_WINDOW_INTERVALS} intervals "
            f"of {interval:g} s and be below --duration {args.duration:g} s"
        )
    return SteadyRule(args.until_steady / 100, window, args.duration)


def _restart_seconds(args: argparse.Namespace) -> float | None:
    """--restart-clients in seconds into the measurement; a UsageError where it can't be."""
    if args.restart_clients is None:
        return None
    if args.threads:
        raise UsageError(
            "--restart-clients starts new worker processes, which --threads doesn't start; "
            "run it without --threads"
        )
    kind, value = args.restart_clients
    restart = float(value * args.duration if kind == "fraction" else value)
    if restart >= args.duration:
        raise UsageError(
            f"--restart-clients {restart:g} s is not within --duration {args.duration:g} s"
        )
    return restart


def mix_footprint(
    args: argparse.Namespace, workload: Workload, hosts: tuple[HostSpec, ...]
) -> Footprint:
    """What a mix's workers hold, for the limits every mode shares.

    Each worker holds its largest transaction and, as it wanders over the
    dataset, up to ZODB's default connection cache of its objects; a skewed
    key chooser keeps a table of 8 bytes per key.
    """
    local = 1.0
    if hosts:
        local = sum(h.share for h in hosts if h.is_local) / sum(h.share for h in hosts)
    skewed = workload.keys in (ZIPFIAN, LATEST)
    return Footprint(
        workers=args.concurrency,
        transaction_objects=transaction_objects(
            workload, args.objects_per_transaction, args.scan_length
        ),
        cached_objects=min(args.objects, CONNECTION_CACHE_OBJECTS),
        object_size_bytes=args.object_size,
        stored_objects=args.objects,
        extra_bytes_per_worker=8 * args.objects if skewed else 0,
        local_fraction=local,
        held=f"(K or L) + min(-n, {CONNECTION_CACHE_OBJECTS:,}) cached",
        stored_by="-n",
    )


def run(args: argparse.Namespace) -> int:
    """The mix subcommand; its exit code (0 measured, 1 a database failed, 2 nothing ran)."""
    require_hdrhistogram()
    # Lazy imports: the subcommand parser reads this module's arguments for
    # every subcommand; the runner (and ZODB) load only for a mix run.
    from zodbshootout.cli.outputs import RunOutputs
    from zodbshootout.concurrency.hosts import HostError, load_execnet
    from zodbshootout.mix.runner import MixRunner

    options = mix_options(args)
    if args.debug:
        from zodbshootout.redact import enable_debug_log

        enable_debug_log()  # a failed database's traceback, as the classic run's --debug
    outputs = RunOutputs(args)
    say = said_by("mix", bool(args.quiet))

    def before() -> None:
        if options.hosts:
            load_execnet()  # a missing extra is the one line, before anything starts

    return run_mode(
        args,
        outputs,
        lambda config: MixRunner(config, options, say, outputs.database_done),
        lambda result: _finish(result, outputs, bool(args.quiet), args.per_worker),
        before=before,
        usage_errors=(HostError,),
    )


def _finish(result: RunResult, outputs: RunOutputs, quiet: bool, per_worker: bool) -> int:
    from zodbshootout.render.formats import get_format
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_fairness import starved_warnings
    from zodbshootout.results.mix_stats import trend_warnings

    # 2 only when no database could be set up; a server that died later is a failure (1).
    if setup_failed(result, bool(result.mix), "mix"):
        return errors.EXIT_USAGE
    run = MixRun.of(result, per_worker)
    if outputs.table_on_stdout:
        for line in get_format(outputs.format).mix(run):
            emit(line)
    if not quiet:
        for record in run.records:
            for warning in trend_warnings(record) + starved_warnings(record):
                emit(f"zodbshootout mix: warning: {warning}", sys.stderr)
    return exit_for_mode(result, outputs)


COMMAND = Command(description=DESCRIPTION, add_arguments=add_arguments, run=run)

"""How stable and how true are zodbshootout's numbers on this machine?

Not a test: a measurement of the tool itself, to run by hand (it takes
minutes) and to paste into a report.  It prints

1. per run of ``zodbshootout CONFIG`` (the default options, K times): the
   wall time, the load average before and after, and how many cells the
   tool itself flagged as noisy;
2. per cell, the coefficient of variation (CV: standard deviation ÷ mean)
   of the cell's rate across the K runs, with the median and the maximum per
   database column and overall;
3. unless ``--no-scaling``: runs at larger object counts (``-n 10000`` and
   ``-n 100000`` with ``-c 2`` by default) next to one at ``-n 1000``, and for
   hot and steamin the cost per object at each count relative to ``-n 1000``
   (1.00 = the same cost per object; the issue asks for at most 1.5), plus
   any cell that failed.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/stability.py                      # etc/local.conf, 5 runs
    python benchmarks/stability.py -k 3 --no-scaling    # quicker
    python benchmarks/stability.py etc/sample.conf --counts 10000
    python benchmarks/stability.py -- --precision 2     # options for every run

Everything after ``--`` goes to every zodbshootout run.  The JSON files of the
runs are kept in ``--keep DIR`` if given (``zodbshootout show`` reads them).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from zodbshootout.results import file as resultfile
from zodbshootout.results.record import CellKey, RunResult
from zodbshootout.results.stats import cell_stats, noisy_cells

#: The issue's targets, printed next to the figures.
TARGET_MEDIAN_CV = 0.05
TARGET_COST_RATIO = 1.5
SCALED_PHASES = ("hot", "steamin")


@dataclass
class Run:
    """One zodbshootout run: its result and what the machine was doing."""

    label: str
    seconds: float
    load_before: float
    load_after: float
    exit_code: int
    result: RunResult | None
    stderr_tail: list[str] = field(default_factory=list)


def run_zodbshootout(config: str, args: list[str], output: str, label: str) -> Run:
    """Run the tool once, quietly, saving its result to *output*."""
    command = [sys.executable, "-m", "zodbshootout", config, "-q", "-o", output, *args]
    load_before = os.getloadavg()[0]
    start = time.monotonic()
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    load_after = os.getloadavg()[0]
    result = resultfile.load(output) if os.path.exists(output) else None
    tail = finished.stderr.strip().splitlines()[-3:] if finished.returncode else []
    return Run(label, seconds, load_before, load_after, finished.returncode, result, tail)


def cell_rate(result: RunResult, key: CellKey) -> float | None:
    """The rate the table shows for *key* (mean aggregate), or None."""
    if result.failure_for(key) is not None:
        return None
    stats = cell_stats(result, key)
    return None if stats is None else stats.mean


def cv_table(runs: list[Run]) -> tuple[list[str], list[str], dict[tuple[str, str], float]]:
    """Per row (phase, with count and concurrency when there are several) and
    database: the CV of the cell's rate across the runs.

    Cells measured in fewer than two runs are left out (no spread to compute).
    """
    results = [run.result for run in runs if run.result is not None]
    if not results:
        return [], [], {}
    first = results[0]
    several = len(first.object_counts) * len(first.concurrencies) > 1
    rows, cvs = [], {}
    for concurrency in first.concurrencies:
        for count in first.object_counts:
            for phase in first.phases:
                row = f"{phase} n={count} c={concurrency}" if several else phase
                rows.append(row)
                for database in first.databases:
                    key = CellKey(database, concurrency, count, phase)
                    rates = [r for r in (cell_rate(res, key) for res in results) if r is not None]
                    if len(rates) > 1:
                        cvs[(row, database)] = statistics.stdev(rates) / statistics.fmean(rates)
    return rows, list(first.databases), cvs


def format_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Left-aligned first column, right-aligned figures."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        cells = [row[0].ljust(widths[0])]
        cells += [text.rjust(width) for text, width in zip(row[1:], widths[1:], strict=True)]
        return "  ".join(cells).rstrip()

    return [line(header), *(line(row) for row in rows)]


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def format_runs(runs: list[Run]) -> list[str]:
    rows = []
    for run in runs:
        result = run.result
        flagged = cells = "-"
        if result is not None:
            cells = str(len(result.phases) * len(result.databases) * len(result.object_counts))
            flagged = str(len(noisy_cells(result)))
        rows.append(
            [
                run.label,
                f"{run.seconds:.1f}",
                f"{run.load_before:.2f} → {run.load_after:.2f}",
                f"{flagged}/{cells}",
                str(run.exit_code),
            ]
        )
    header = ["run", "seconds", "load average", "flagged cells", "exit"]
    lines = format_table(header, rows)
    for run in runs:
        for text in run.stderr_tail:
            lines.append(f"  {run.label}: {text[:160]}")
    return lines


def format_cvs(runs: list[Run]) -> list[str]:
    phases, databases, cvs = cv_table(runs)
    if not cvs:
        return ["no cell was measured in two runs: no spread to show"]
    rows = [[phase, *(percent(cvs.get((phase, db))) for db in databases)] for phase in phases]

    def summary(name: str, pick: object) -> list[str]:
        cells = []
        for db in databases:
            values = [cvs[(p, db)] for p in phases if (p, db) in cvs]
            cells.append(percent(pick(values) if values else None))  # type: ignore[operator]
        return [name, *cells]

    rows.append(summary("median", statistics.median))
    rows.append(summary("max", max))
    overall = statistics.median(cvs.values())
    verdict = "meets" if overall <= TARGET_MEDIAN_CV else "misses"
    return [
        *format_table(["CV across runs", *databases], rows),
        f"overall median CV {percent(overall)} ({verdict} the {TARGET_MEDIAN_CV:.0%} target; "
        "the target assumes an idle machine: compare the load averages above "
        f"with the {os.cpu_count()} cores)",
    ]


def format_scaling(base: Run, scaled: list[Run]) -> list[str]:
    """Hot and steamin cost per object at each count, relative to the base run."""
    if base.result is None:
        return [f"the -n 1000 run failed (exit {base.exit_code}): nothing to compare with"]
    databases = base.result.databases
    concurrency = base.result.concurrencies[0]
    base_count = base.result.object_counts[0]
    rows = []
    worst = 0.0
    for run in scaled:
        if run.result is None:
            rows.append([f"{run.label}: failed", *("-" for _ in databases)])
            continue
        count = run.result.object_counts[0]
        for phase in SCALED_PHASES:
            cells = []
            for db in databases:
                before = cell_rate(base.result, CellKey(db, concurrency, base_count, phase))
                after = cell_rate(run.result, CellKey(db, concurrency, count, phase))
                if before is None or after is None:
                    cells.append("n/a")
                    continue
                # Cost per object is c ÷ rate, so the ratio of costs is the
                # inverse ratio of the rates.
                ratio = before / after
                worst = max(worst, ratio)
                cells.append(f"{ratio:.2f}x")
            rows.append([f"{phase} n={count}", *cells])
    header = [f"cost per object vs n={base_count}", *databases]
    lines = format_table(header, rows)
    verdict = "within" if worst <= TARGET_COST_RATIO else "beyond"
    lines.append(f"worst ratio {worst:.2f}x ({verdict} the {TARGET_COST_RATIO}x target)")
    for run in [base, *scaled]:
        lines.extend(format_failures(run))
    return lines


def format_failures(run: Run) -> list[str]:
    if run.result is None:
        return [f"{run.label}: no result (exit {run.exit_code})"]
    lines = []
    for failure in run.result.failures:
        lines.append(
            f"{run.label}: {failure.database} {','.join(failure.phases)} failed: "
            f"{failure.reason[:200]}"
        )
    return lines


def parse_arguments(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    passthrough: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", nargs="?", default="etc/local.conf")
    parser.add_argument("-k", "--runs", type=int, default=5, help="default runs (default: 5)")
    parser.add_argument(
        "--counts",
        default="10000,100000",
        help="object counts compared with -n 1000 (default: 10000,100000)",
    )
    parser.add_argument(
        "--scaling-concurrency", type=int, default=2, help="-c of the scaling runs (default: 2)"
    )
    parser.add_argument(
        "--scaling-repetitions",
        type=int,
        default=1,
        help="-r of the scaling runs (default: 1; every sample of hot and steamin lasts "
        "at least 50 ms, and -n 100000 takes minutes per repetition); 0: the tool's own rule",
    )
    parser.add_argument("--no-scaling", action="store_true", help="skip the scaling runs")
    parser.add_argument("--keep", metavar="DIR", help="keep the runs' JSON files in DIR")
    return parser.parse_args(argv), passthrough


def main(argv: list[str] | None = None) -> int:
    options, passthrough = parse_arguments(sys.argv[1:] if argv is None else argv)
    if options.keep:
        os.makedirs(options.keep, exist_ok=True)
        return measure(options, passthrough, options.keep)
    # Without --keep the runs' files are scratch: removed however the script ends.
    with tempfile.TemporaryDirectory(prefix="zodbshootout-stability-") as directory:
        return measure(options, passthrough, directory)


def measure(options: argparse.Namespace, passthrough: list[str], directory: str) -> int:
    """The default runs, then (unless --no-scaling) the scaling runs, printed."""

    def out(lines: list[str]) -> None:
        print("\n".join(lines), flush=True)

    cores = os.cpu_count()
    out(
        [
            f"zodbshootout stability: {options.config}, {options.runs} default runs, "
            f"{cores} cores, load average {os.getloadavg()[0]:.2f} at the start",
            "",
        ]
    )
    runs = [
        run_zodbshootout(
            options.config, passthrough, os.path.join(directory, f"run{k}.json"), f"run {k}"
        )
        for k in range(1, options.runs + 1)
    ]
    out([*format_runs(runs), "", *format_cvs(runs)])
    if options.no_scaling:
        return 0
    concurrency = ["-c", str(options.scaling_concurrency)]
    if options.scaling_repetitions:
        concurrency += ["-r", str(options.scaling_repetitions)]
    scaled = []
    base = run_zodbshootout(
        options.config,
        ["-n", "1000", *concurrency, *passthrough],
        os.path.join(directory, "n1000.json"),
        "n=1000",
    )
    for count in [int(n) for n in options.counts.split(",") if n]:
        scaled.append(
            run_zodbshootout(
                options.config,
                ["-n", str(count), *concurrency, *passthrough],
                os.path.join(directory, f"n{count}.json"),
                f"n={count}",
            )
        )
    out(["", *format_runs([base, *scaled]), "", *format_scaling(base, scaled)])
    if options.keep:
        out(["", f"result files: {directory}"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

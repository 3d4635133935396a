"""Does ``--hosts localhost`` give the numbers of a plain run?

Not a test: a measurement to run by hand and paste into a report.  The
workers of ``--hosts`` are execnet gateways instead of multiprocessing
children, and their barrier is the coordinator's ready/go over channels; if
either cost anything inside a timed region, the rates would differ.  In
rounds, it runs the same configuration plainly and with ``--hosts
localhost``, alternating which goes first, and prints per cell the ratio
(``--hosts`` ÷ plain, mean rates): the median and range over the rounds,
and the load average around each round.  1.00 means the launcher costs
nothing; the spread of the ratios is the machine's noise.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/hosts_local.py                     # etc/local.conf, 4 rounds
    python benchmarks/hosts_local.py --rounds 6 -- -n 1000 -c 2 -r 3   # options for every run
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from zodbshootout.results import file as resultfile
from zodbshootout.results.stats import cell_stats

CHECKOUT = Path(__file__).resolve().parent.parent


def _run(config: str, extra: list[str], out: Path, data: Path) -> dict:
    """One run; its mean rate per cell (cell key -> objects/s)."""
    argv = [sys.executable, "-m", "zodbshootout", config, *extra, "-q", "-o", str(out)]
    env = {**os.environ, "ZODBSHOOTOUT_DATA": str(data)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    result = resultfile.load(str(out))
    rates = {}
    for key in result.cell_keys():
        stats = cell_stats(result, key)
        if stats is not None:
            rates[key] = stats.mean
    return rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default=str(CHECKOUT / "etc" / "local.conf"))
    parser.add_argument("--rounds", type=int, default=4)
    argv = sys.argv[1:] if argv is None else argv
    ours, extra = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    args = parser.parse_args(ours)
    extra = extra or ["-n", "1000", "-c", "2", "-r", "3"]
    ratios: dict = {}
    with tempfile.TemporaryDirectory(prefix="hosts-local-") as scratch:
        work = Path(scratch)
        for round_number in range(args.rounds):
            before = os.getloadavg()[0]
            order = [("plain", []), ("hosts", ["--hosts", "localhost"])]
            if round_number % 2:
                order.reverse()
            rates = {
                name: _run(args.config, extra + more, work / f"{name}.json", work / name)
                for name, more in order
            }
            after = os.getloadavg()[0]
            print(f"round {round_number + 1}: load {before:.1f} -> {after:.1f}", flush=True)
            for key, plain in rates["plain"].items():
                hosted = rates["hosts"].get(key)
                if hosted and plain:
                    ratios.setdefault(key, []).append(hosted / plain)
    print(f"\n--hosts localhost / plain, mean rates, {args.rounds} rounds ({' '.join(extra)}):")
    print(f"{'database':12} {'c':>2} {'phase':9} {'median':>7} {'range':>13}")
    medians = []
    for key, values in ratios.items():
        median = statistics.median(values)
        medians.append(median)
        spread = f"{min(values):.2f}-{max(values):.2f}"
        print(f"{key.database:12} {key.concurrency:>2} {key.phase:9} {median:7.2f} {spread:>13}")
    if medians:
        print(f"median of the cells' medians: {statistics.median(medians):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

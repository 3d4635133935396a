"""Is ``mix`` as fast as it was?  This checkout against another commit, interleaved.

Not a test: a measurement to run by hand and paste into a report.  It checks
out REF (default: the commit before round 4's refactoring of the runners) in
a temporary git worktree and runs ``zodbshootout mix CONFIG -w WORKLOAD``
with each version's source in turn — ABBA, for ``--rounds`` rounds — in this
Python and its installed packages, so the tool's own code is the only
difference.  Each run's throughput per database is its committed
transactions divided by its measured seconds, read from the saved result.
It prints each database's median transactions per second for both, the
ratio (this checkout ÷ REF) and its range over the rounds, and the load.

Both sides run on one data directory, loaded once by an untimed first run
of this checkout, so that they measure the same database state (on
RelStorage's SQLite, for one, what the planner statistics say: see
zodbshootout.storages.relstorage.sqlite_planner).

Usage::

    python benchmarks/mix_ab.py [--ref COMMIT] [--rounds 4] [-d 10] [CONFIG]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: main before the runner skeleton and the task protocol landed.
DEFAULT_REF = "8c72d7d"


def throughput(
    source: pathlib.Path, config: str, args: argparse.Namespace, out: str, data: str
) -> dict:
    """Transactions per second of each database, from one mix run of *source*'s code."""
    env = {**os.environ, "PYTHONPATH": str(source / "src"), "ZODBSHOOTOUT_DATA": data}
    words = ["-w", args.workload, "-d", str(args.duration), "--warmup", "1", "-q", "-o", out]
    words += ["-n", str(args.objects)]
    subprocess.run(
        [sys.executable, "-m", "zodbshootout", "mix", config, *words],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=source,
    )
    document = json.loads(pathlib.Path(out).read_text())
    rates = {}
    for record in document["mix"]:
        committed = sum(o["count"] for o in record["operations"].values())
        rates[record["database"]] = committed / record["seconds"]
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", nargs="?", default=str(ROOT / "etc" / "local.conf"))
    parser.add_argument("--ref", default=DEFAULT_REF)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("-d", "--duration", type=float, default=10.0)
    parser.add_argument("-w", "--workload", default="ycsb-b")
    parser.add_argument("-n", "--objects", type=int, default=20_000)
    args = parser.parse_args()
    config = os.path.abspath(args.config)
    with tempfile.TemporaryDirectory(prefix="mix-ab-") as scratch:
        old = pathlib.Path(scratch) / "ref"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.ref],
            check=True,
            capture_output=True,
        )
        try:
            runs: dict[str, list[dict]] = {"this": [], "ref": []}
            sources = {"this": ROOT, "ref": old}
            data = os.path.join(scratch, "data")
            os.mkdir(data)
            # Untimed: loads the dataset (and leaves it as RelStorage leaves it).
            throughput(ROOT, config, args, os.path.join(scratch, "load.json"), data)
            for round_ in range(args.rounds):
                order = ["this", "ref"] if round_ % 2 == 0 else ["ref", "this"]
                for side in order:
                    out = os.path.join(scratch, f"{side}-{round_}.json")
                    runs[side].append(throughput(sources[side], config, args, out, data))
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)],
                check=False,
                capture_output=True,
            )
    print(
        f"mix -w {args.workload} -n {args.objects} -d {args.duration:g}, "
        f"{args.rounds} rounds ABBA on one data directory; "
        f"this checkout vs {args.ref}; load {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores"
    )
    print(f"{'database':<14}{'this tx/s':>12}{'ref tx/s':>12}{'ratio':>8}  range")
    for database in runs["this"][0]:
        this = [r[database] for r in runs["this"]]
        ref = [r[database] for r in runs["ref"]]
        ratios = [a / b for a, b in zip(this, ref, strict=True)]
        print(
            f"{database:<14}{statistics.median(this):>12.0f}{statistics.median(ref):>12.0f}"
            f"{statistics.median(ratios):>8.3f}  {min(ratios):.3f}-{max(ratios):.3f}"
        )


if __name__ == "__main__":
    main()

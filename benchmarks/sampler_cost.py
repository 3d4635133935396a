"""What sampling a mix run's series costs: the sampler thread's CPU and each worker's time.

Not a test: a measurement to run by hand and paste into a report.  It runs
``zodbshootout mix`` on one database of a configuration for ``--seconds``
at each ``--interval`` and reads what the run itself recorded of its
sampling (``series_cost`` in the mix record):

- the sampler thread of the runner's process: its CPU seconds
  (``time.thread_time`` in the thread, the last sample after the workers
  included) over the measured seconds, as a share of one core;
- each worker: the CPU seconds it spent reading its client series between
  transactions (``time.thread_time`` around each reading), as a share of
  its measured seconds (the worst worker).

With ZEO, the client's I/O thread carries the sampler's server_status
calls and is not counted in the sampler thread's CPU.  The database's own
work to answer the sampler (PostgreSQL reading its
statistics views) is on the server's side and not counted here.  The
issue's target is under 1 % of a core.

Usage::

    python benchmarks/sampler_cost.py CONFIG DATABASE [--seconds 20] [--intervals 1,0.1]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


def _run(config: str, database: str, seconds: float, interval: float, workers: int) -> dict:
    """One mix run of *database* alone; its record."""
    with tempfile.TemporaryDirectory() as directory:
        out = os.path.join(directory, "run.json")
        command = [
            *(sys.executable, "-m", "zodbshootout", "mix", config, "-q"),
            *("--duration", str(seconds), "--warmup", "1", "--interval", str(interval)),
            *("-c", str(workers), "-n", "1000", "--seed", "1", "-o", out),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"the run failed (exit {done.returncode}):\n{done.stderr}")
        with open(out, encoding="utf-8") as saved:
            records = json.load(saved)["mix"]
    record = next((r for r in records if r["database"] == database), None)
    if record is None:
        raise SystemExit(f"{database} is not a database of {config}")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a configuration of the one database to sample")
    parser.add_argument("database", help="its database name")
    parser.add_argument("--seconds", type=float, default=20.0, help="each run's --duration")
    parser.add_argument("--intervals", default="1,0.1", help="the --interval of each run")
    parser.add_argument("-c", "--concurrency", type=int, default=2)
    args = parser.parse_args()
    print(f"{args.database}: {args.concurrency} workers, {args.seconds:g} s per run")
    print(
        f"{'interval':>9} {'samples':>8} {'series':>7} {'thread CPU':>11} {'of a core':>10} "
        f"{'worker CPU':>11} {'of worker':>10}"
    )
    for interval in (float(word) for word in args.intervals.split(",")):
        record = _run(args.config, args.database, args.seconds, interval, args.concurrency)
        cost = record.get("series_cost") or {}
        seconds = record["seconds"]
        cpu = cost.get("sampler_cpu_seconds", 0.0)
        clients = cost.get("client_seconds") or [0.0]
        worst = max(clients)
        print(
            f"{interval:>8g}s {cost.get('sampler_samples', 0):>8} {len(record['series']):>7} "
            f"{cpu * 1000:>9.1f}ms {cpu / seconds:>10.3%} {worst * 1000:>9.2f}ms "
            f"{worst / seconds:>10.4%}"
        )


if __name__ == "__main__":
    main()

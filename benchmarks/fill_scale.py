"""How fast ``zodbshootout fill`` writes a big database, on FileStorage and RelStorage SQLite.

Not a test: a measurement to run by hand (issue 33's check: 10^6 objects of
100 bytes on each, within the budget, with objects/s).  Each storage is
filled in a temporary directory of its own by the real command line, then
the directory is removed.  Usage, in the venv that has zodbshootout::

    python benchmarks/fill_scale.py                  # 10^6 objects, a few minutes
    python benchmarks/fill_scale.py -n 100000 --garbage 0.2 --revisions 2

It prints one line per storage (objects/s, revisions/s, bytes on disk) and the
machine's load; exit code 1 if a fill failed or took longer than --budget.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

SECTIONS = {
    "filestorage": "<zodb filestorage>\n <filestorage>\n  path $(ZODBSHOOTOUT_DATA)/fs.fs\n"
    " </filestorage>\n</zodb>\n",
    "sqlite": "%import relstorage\n<zodb sqlite>\n <relstorage>\n  <sqlite3>\n"
    "   driver sqlite3\n   data-dir $(ZODBSHOOTOUT_DATA)/sqlite\n  </sqlite3>\n"
    " </relstorage>\n</zodb>\n",
}


def directory_bytes(path: str) -> int:
    return sum(
        os.path.getsize(os.path.join(top, name))
        for top, _dirs, files in os.walk(path)
        for name in files
    )


def fill_one(name: str, args: argparse.Namespace) -> tuple[bool, str]:
    directory = tempfile.mkdtemp(prefix=f"fill-scale-{name}-")
    try:
        config = os.path.join(directory, "fill.conf")
        with open(config, "w") as file:
            file.write(SECTIONS[name])
        data = os.path.join(directory, "data")
        command = [sys.executable, "-m", "zodbshootout", "fill", config, "-q"]
        command += ["-n", str(args.objects), "-s", str(args.object_size)]
        command += ["--garbage", str(args.garbage), "--revisions", str(args.revisions)]
        started = time.perf_counter()
        done = subprocess.run(
            command, env=dict(os.environ, ZODBSHOOTOUT_DATA=data), capture_output=True, text=True
        )
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            return False, f"{name}: exit {done.returncode}: {done.stderr.strip()}"
        size = directory_bytes(data)
        line = (
            f"{name}: {done.stdout.strip()} | command {seconds:.1f} s, {size / 1e6:,.0f} MB on disk"
        )
        return seconds <= args.budget, line
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--objects", type=int, default=1_000_000)
    parser.add_argument("-s", "--object-size", type=int, default=100)
    parser.add_argument("--garbage", type=float, default=0.0)
    parser.add_argument("--revisions", type=int, default=1)
    parser.add_argument("--budget", type=float, default=1800.0, help="seconds per storage")
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    args = parser.parse_args()
    good = True
    for name in args.only or SECTIONS:
        ok, line = fill_one(name, args)
        good = good and ok
        print(line, flush=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())

"""``zodbshootout maintain`` on big databases: FileStorage and RelStorage SQLite at 10^6 objects.

Not a test: a measurement to run by hand (issue 33's figures at 10^6
objects; docs/maintenance.rst shows its output).  Each storage gets a
temporary directory of its own; the real command line fills it (untimed
here: see benchmarks/fill_scale.py) and times the operations, then the
directory is removed.  Usage, in the venv that has zodbshootout::

    python benchmarks/maintain_scale.py                 # 10^6 objects: many minutes
    python benchmarks/maintain_scale.py -n 100000 --operations open,reindex,pack,gc
    python benchmarks/maintain_scale.py -n 100000 --only zeo \
        --operations first-transaction-cold,first-transaction-warm

It prints each storage's maintain table (with its footnotes), the command's
own wall time, and the machine's load average before and after; exit code 1
if a command failed.
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
    # A ZEO server of the tool's; its clients keep a persistent cache (``client``).
    "zeo": "%import zodbshootout\n<zodb zeo>\n <embeddedzeo>\n  client cache\n  <filestorage>\n"
    "   path $(ZODBSHOOTOUT_DATA)/zeo.fs\n  </filestorage>\n </embeddedzeo>\n</zodb>\n",
}
# RelStorage on PostgreSQL (--dsn: a new, empty database of the reader's),
# with a persistent client cache (relstorage#513).
POSTGRESQL = (
    "%import relstorage\n<zodb postgresql>\n <relstorage>\n"
    "  cache-local-dir $(ZODBSHOOTOUT_DATA)/cache\n  <postgresql>\n   dsn {dsn}\n"
    "  </postgresql>\n </relstorage>\n</zodb>\n"
)
#: The storages measured unless --only says otherwise.
DEFAULT = ("filestorage", "sqlite")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def maintain_one(name: str, args: argparse.Namespace) -> tuple[bool, str]:
    directory = tempfile.mkdtemp(prefix=f"maintain-scale-{name}-")
    try:
        config = os.path.join(directory, "maintain.conf")
        with open(config, "w") as file:
            file.write(POSTGRESQL.format(dsn=args.dsn) if name == "postgresql" else SECTIONS[name])
        data = os.path.join(directory, "data")
        os.makedirs(os.path.join(data, "cache"))
        command = [sys.executable, "-m", "zodbshootout", "maintain", config, "-q"]
        command += ["--sizes", str(args.objects), "--operations", args.operations]
        command += ["--garbage", str(args.garbage), "--revisions", str(args.revisions)]
        if args.cache_objects is not None:
            command += ["--cache-objects", str(args.cache_objects)]
        started = time.perf_counter()
        done = subprocess.run(
            command, env=dict(os.environ, ZODBSHOOTOUT_DATA=data), capture_output=True, text=True
        )
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            return False, f"{name}: exit {done.returncode}: {done.stderr.strip()}"
        return True, f"{done.stdout.rstrip()}\n({name}: the command took {seconds:.0f} s)"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--objects", type=int, default=1_000_000)
    parser.add_argument("--garbage", type=float, default=0.2)
    parser.add_argument("--revisions", type=int, default=2)
    parser.add_argument("--operations", default="open,reindex,pack")
    parser.add_argument("--cache-objects", type=int, default=None)
    parser.add_argument("--dsn", default="", help="--only postgresql: a new, empty database's")
    parser.add_argument(
        "--only", choices=sorted([*SECTIONS, "postgresql"]), action="append",
        help="default: " + ", ".join(DEFAULT),
    )  # fmt: skip
    args = parser.parse_args()
    good = True
    print(f"load average at the start: {load()}", flush=True)
    for name in args.only or DEFAULT:
        ok, text = maintain_one(name, args)
        good = good and ok
        print(text, flush=True)
    print(f"load average at the end: {load()}")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())

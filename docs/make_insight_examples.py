"""Measure etc/floors.conf with the insight options and write the examples docs/insight.rst shows.

Run it from anywhere, with the Python that has zodbshootout (and lmdb) installed::

    python docs/make_insight_examples.py            # -n 1000 -c 2 -r 2
    python docs/make_insight_examples.py -r 3       # extra arguments go to zodbshootout
    python docs/make_insight_examples.py --cachesim-only   # a traced run for cachesim alone

It writes, in docs/examples/:

insight.json           the saved run (--index-entries 2 --cache-trace DIR -o)
insight.md             its table with the insight rows (show --format markdown)
insight-cachesim.txt   cachesim of its traces: every database and stage, three policies

Commit these files with the documentation.
"""

from __future__ import annotations

import sys
import tempfile

from make_examples import EXAMPLES, zodbshootout

CONFIG = "etc/floors.conf"
DEFAULTS = ["-n", "1000", "-c", "2", "-r", "2"]


def cachesim(traces: str) -> None:
    """The table docs/insight.rst shows: every database and stage of the run, three policies."""
    zodbshootout(
        "cachesim", traces, "--policy", "zeo,relstorage,lru",
        "--sizes", "64KB,256KB,1MB,4MB", stdout=EXAMPLES / "insight-cachesim.txt",
    )  # fmt: skip


def main(argv: list[str]) -> int:
    EXAMPLES.mkdir(exist_ok=True)
    if argv[:1] == ["--cachesim-only"]:
        with tempfile.TemporaryDirectory(prefix="zodbshootout-traces-") as traces:
            # The same run without the floors and the result file.
            zodbshootout("etc/local.conf", "-q", "--cache-trace", traces, *(argv[1:] or DEFAULTS))
            cachesim(traces)
        return 0
    result = EXAMPLES / "insight.json"
    with tempfile.TemporaryDirectory(prefix="zodbshootout-traces-") as traces:
        zodbshootout(
            CONFIG, "-q", "--index-entries", "2", "--cache-trace", traces,
            "-o", str(result), *(argv or DEFAULTS),
        )  # fmt: skip
        zodbshootout(
            "show", "-q", "--format", "markdown", str(result), stdout=EXAMPLES / "insight.md"
        )
        cachesim(traces)
    print(f"make_insight_examples: wrote {EXAMPLES}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Measure etc/floors.conf with the insight options and write the examples docs/insight.rst shows.

Run it from anywhere, with the Python that has zodbshootout (and lmdb) installed::

    python docs/make_insight_examples.py            # -n 1000 -c 2 -r 2
    python docs/make_insight_examples.py -r 3       # extra arguments go to zodbshootout

It writes, in docs/examples/:

insight.json           the saved run (--index-entries 2 --cache-trace DIR -o)
insight.md             its table with the insight rows (show --format markdown)
insight-cachesim.txt   cachesim of two of its read-stage traces

Commit these files with the documentation.
"""

from __future__ import annotations

import sys
import tempfile

from make_examples import EXAMPLES, zodbshootout

CONFIG = "etc/floors.conf"
DEFAULTS = ["-n", "1000", "-c", "2", "-r", "2"]


def main(argv: list[str]) -> int:
    EXAMPLES.mkdir(exist_ok=True)
    result = EXAMPLES / "insight.json"
    with tempfile.TemporaryDirectory(prefix="zodbshootout-traces-") as traces:
        zodbshootout(
            CONFIG, "-q", "--index-entries", "2", "--cache-trace", traces,
            "-o", str(result), *(argv or DEFAULTS),
        )  # fmt: skip
        zodbshootout(
            "show", "-q", "--format", "markdown", str(result), stdout=EXAMPLES / "insight.md"
        )
        cell = "n1000-c2-r1" if not argv else "*"
        zodbshootout(
            "cachesim", f"{traces}/zeo_fs-{cell}-read-w0.trace",
            f"{traces}/sqlite-{cell}-read-w0.trace", "--sizes", "64KB,256KB,1MB,4MB",
            stdout=EXAMPLES / "insight-cachesim.txt",
        )  # fmt: skip
    print(f"make_insight_examples: wrote {EXAMPLES}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

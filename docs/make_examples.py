"""Measure etc/local.conf on this machine and write the example results the docs show.

Run it from anywhere, with the Python that has zodbshootout installed::

    python docs/make_examples.py              # the defaults of zodbshootout
    python docs/make_examples.py -r 5         # extra arguments go to zodbshootout

It writes, in docs/examples/:

local.json     the saved run (``zodbshootout etc/local.conf -o``)
local.txt      its classic table (``zodbshootout show``)
local-table.txt  the same with the spread (``zodbshootout show --format table``)
local.png      a chart of it (``zodbshootout plot``), when the plot subcommand and
               matplotlib are available; otherwise the old chart, if any, is removed
machine.rst    the machine and software it was measured with, from the run's metadata

Commit these files with the documentation: docs/results.rst includes them.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
from typing import Any

DOCS = pathlib.Path(__file__).resolve().parent
ROOT = DOCS.parent
EXAMPLES = DOCS / "examples"
CONFIG = "etc/local.conf"


def zodbshootout(*args: str, stdout: pathlib.Path | None = None) -> None:
    """Run the installed command from the top of the checkout; stop if it fails."""
    command = [sys.executable, "-m", "zodbshootout", *args]
    print("+ zodbshootout " + " ".join(args), file=sys.stderr)
    env = {k: v for k, v in os.environ.items() if k != "ZODBSHOOTOUT_DATA"}
    env["NO_COLOR"] = "1"  # the terminal table without escape codes
    env["COLUMNS"] = "100"
    with open(stdout, "w", encoding="utf-8") if stdout else open(os.devnull, "w") as out:
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"make_examples: {' '.join(command)} exited with {done.returncode}")


def has_subcommand(name: str) -> bool:
    try:
        from zodbshootout.cli.arguments import SUBCOMMANDS
    except ImportError:
        return False
    return name in SUBCOMMANDS


def format_bytes(count: int | None) -> str:
    return "unknown" if not count else f"{count / 2**30:.1f} GiB"


def machine_description(result: dict[str, Any], plotted: bool) -> str:
    """reStructuredText describing where and how local.json was measured."""
    metadata = result["metadata"]
    environment = metadata["environment"]
    options = metadata["options"]
    started = metadata.get("started")
    when = (
        datetime.datetime.fromtimestamp(started, datetime.timezone.utc).strftime("%Y-%m-%d")
        if started
        else "unknown"
    )
    packages = ", ".join(
        f"{name} {version}" for name, version in environment["packages"].items() if version
    )
    python = environment["python"]
    counts = ",".join(str(n) for n in options["object_counts"])
    concurrencies = ",".join(str(c) for c in options["concurrencies"])
    lines = [
        ".. This file is written by docs/make_examples.py; edit that script instead.",
        "",
        f"- Measured on {when} with ``zodbshootout {CONFIG} -n {counts} -c {concurrencies}"
        f" {_repetitions(options)}`` ({options['mode']}, mean of the repetitions).",
        f"- CPU: {environment['cpu_model']}, {environment['cpu_count']} logical cores"
        " (a shared virtual machine, so expect some noise).",
        f"- Memory: {format_bytes(environment['memory_bytes'])}.",
        f"- Load average (1 minute) at start and end: {_load(environment)}.",
        f"- System: {environment['platform']}.",
        f"- Python: {python['implementation']} {python['version']}.",
        f"- zodbshootout {environment['zodbshootout']}; {packages}.",
    ]
    if not plotted:
        lines.append("- No chart: this zodbshootout has no ``plot`` subcommand or no matplotlib.")
    return "\n".join(lines) + "\n"


def _load(environment: dict[str, Any]) -> str:
    """The machine's load at the start and end of the run, as the metadata recorded it."""
    loads = [environment.get(f"load_average_{when}") for when in ("start", "end")]
    if not all(loads):
        return "unknown"
    return " and ".join(f"{values[0]:.1f}" for values in loads)


def _repetitions(options: dict[str, Any]) -> str:
    """How the run chose its repetitions, as its options would say it."""
    precision = options.get("precision")
    if precision:
        seconds = options.get("max_time_seconds")
        return f"-r {options['repetitions']} --precision {precision * 100:g} --max-time {seconds:g}"
    return f"-r {options['repetitions']}"


def main(argv: list[str]) -> int:
    EXAMPLES.mkdir(exist_ok=True)
    result_path = EXAMPLES / "local.json"
    zodbshootout(CONFIG, "-q", "-o", str(result_path), *argv)
    zodbshootout("show", "-q", str(result_path), stdout=EXAMPLES / "local.txt")
    zodbshootout(
        "show", "-q", "--format", "table", str(result_path), stdout=EXAMPLES / "local-table.txt"
    )
    chart = EXAMPLES / "local.png"
    plotted = has_subcommand("plot") and importlib.util.find_spec("matplotlib") is not None
    if plotted:
        zodbshootout("plot", "-q", str(result_path), "-o", str(chart))
    elif chart.exists():
        chart.unlink()  # a chart of an older run would contradict the table
    result = json.loads(result_path.read_text(encoding="utf-8"))
    (EXAMPLES / "machine.rst").write_text(machine_description(result, plotted), encoding="utf-8")
    print(f"make_examples: wrote {EXAMPLES}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Write a run as a pyperf benchmark suite, for ``pyperf compare_to``, ``stats`` and ``hist``.

pyperf measures time, lower is better, so each cell becomes a benchmark
whose values are *seconds per object*: a repetition's mean worker duration
divided by the objects each worker handled (the inverse of the table's
per-worker rate, without the concurrency factor).  Each repetition is one
pyperf run holding one value.  Benchmark names read
``DATABASE PHASE n=N c=C`` so that suites from two runs pair up by name.

The document is built here as plain JSON (pyperf's format version 1.0)
instead of through pyperf's API, so exporting needs no extra package; the
tests load it with the real pyperf.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from zodbshootout import __version__
from zodbshootout.results import CellKey, RunResult

#: The pyperf JSON layout this module writes.
PYPERF_FORMAT_VERSION = "1.0"


def benchmark_name(key: CellKey) -> str:
    return f"{key.database} {key.phase} n={key.object_count} c={key.concurrency}"


def pyperf_document(result: RunResult) -> dict[str, Any]:
    """The run as a pyperf suite (JSON data); cells without a complete repetition are left out."""
    benchmarks = []
    for concurrency in result.concurrencies:
        for database in result.databases:
            for count in result.object_counts:
                for phase in result.phases:
                    key = CellKey(database, concurrency, count, phase)
                    runs = _runs(result, key)
                    if runs:
                        benchmarks.append(
                            {
                                "metadata": {
                                    "name": benchmark_name(key),
                                    "unit": "second",
                                    "description": (
                                        f"seconds per object: {phase} of {count} objects "
                                        f"in {database}, {concurrency} concurrent workers"
                                    ),
                                },
                                "runs": runs,
                            }
                        )
    suite_metadata: dict[str, Any] = {"tool": f"zodbshootout {__version__}"}
    environment = result.metadata.get("environment", {})
    if environment.get("cpu_count"):
        suite_metadata["cpu_count"] = environment["cpu_count"]
    if environment.get("cpu_model"):
        suite_metadata["cpu_model_name"] = environment["cpu_model"]
    if environment.get("platform"):
        suite_metadata["platform"] = environment["platform"]
    python = environment.get("python", {})
    if python.get("version"):
        suite_metadata["python_version"] = python["version"]
    return {"version": PYPERF_FORMAT_VERSION, "metadata": suite_metadata, "benchmarks": benchmarks}


def _runs(result: RunResult, key: CellKey) -> list[dict[str, Any]]:
    runs = []
    for _repetition, timings in sorted(result.timings_for(key).items()):
        if len(timings) != key.concurrency:
            continue
        # Per loop: a looped sample's seconds cover all its loops.
        seconds = statistics.fmean(t.seconds / t.loops for t in timings)
        objects = statistics.fmean(t.objects for t in timings)
        runs.append({"values": [seconds / objects]})
    return runs


def dumps_pyperf(result: RunResult) -> str:
    """The pyperf suite's text, ready to be written to a ``.json`` file."""
    return json.dumps(pyperf_document(result), indent=1) + "\n"

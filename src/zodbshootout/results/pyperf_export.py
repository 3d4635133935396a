"""Write a run as a pyperf benchmark suite, for ``pyperf compare_to``, ``stats`` and ``hist``.

pyperf measures time, lower is better, so each cell becomes a benchmark
whose values are *seconds per object of the cell*: a repetition's mean
worker duration divided by the objects all its workers handled together,
exactly the inverse of the table's objects per second (zodbshootout 1.0
exported seconds per object per worker, ``concurrency`` times larger).
Each repetition is one pyperf run holding one value.  Benchmark names read
``DATABASE PHASE n=N c=C`` so that suites from two runs pair up by name.

The suite's metadata carries the run's: label, date, machine (CPU model,
cores, frequency governor, load average), Python, zodbshootout (and its git
commit), ZODB, ZEO and RelStorage versions, object size and concurrency
mode; each benchmark adds its database's server and driver versions.  The
unit is stated in the metadata (``unit`` and ``zodbshootout_value``).

The document is built here as plain JSON (pyperf's format version 1.0)
instead of through pyperf's API, so exporting needs no extra package; the
tests load it with the real pyperf.
"""

from __future__ import annotations

import datetime
import json
import statistics
from typing import Any

from zodbshootout import __version__
from zodbshootout.results.record import DATABASE_ORDER, CellKey, PhaseTiming, RunResult
from zodbshootout.results.stats import complete_repetitions

#: What each value is, in words, for the suite's and every benchmark's metadata.
VALUE_DESCRIPTION = (
    "seconds per object of the cell: mean worker duration / objects of all workers "
    "(1 / the table's objects per second)"
)

#: The pyperf JSON layout this module writes.
PYPERF_FORMAT_VERSION = "1.0"


def benchmark_name(key: CellKey) -> str:
    return f"{key.database} {key.phase} n={key.object_count} c={key.concurrency}"


def pyperf_document(result: RunResult) -> dict[str, Any]:
    """The run as a pyperf suite (JSON data); cells without a complete repetition are left out."""
    benchmarks = []
    for key, timings in result.cells(DATABASE_ORDER):
        runs = _runs(key, timings)
        if runs:
            metadata: dict[str, Any] = {
                "name": benchmark_name(key),
                "unit": "second",
                "description": (
                    f"seconds per object of the cell: {key.phase} of "
                    f"{key.object_count} objects per worker in {key.database}, "
                    f"{key.concurrency} concurrent workers"
                ),
                **_database_metadata(result, key.database),
            }
            benchmarks.append({"metadata": metadata, "runs": runs})
    return {
        "version": PYPERF_FORMAT_VERSION,
        "metadata": suite_metadata(result),
        "benchmarks": benchmarks,
    }


def suite_metadata(result: RunResult) -> dict[str, Any]:
    """The run's metadata as pyperf metadata: strings and numbers, no empty values."""
    metadata = result.metadata
    environment = metadata.get("environment") or {}
    python = environment.get("python") or {}
    packages = environment.get("packages") or {}
    options = metadata.get("options") or {}
    git = environment.get("git") or {}
    load = environment.get("load_average_start")
    started = metadata.get("started")
    found: dict[str, Any] = {
        "tool": f"zodbshootout {environment.get('zodbshootout', __version__)}",
        "zodbshootout_value": VALUE_DESCRIPTION,
        "label": metadata.get("label"),
        "date": datetime.datetime.fromtimestamp(started, datetime.timezone.utc).isoformat(
            timespec="seconds"
        )
        if isinstance(started, (int, float))
        else None,
        "cpu_model_name": environment.get("cpu_model"),
        "cpu_count": environment.get("cpu_count"),
        "cpu_governor": environment.get("cpu_governor"),
        "load_avg_1min": load[0] if load else None,
        "platform": environment.get("platform"),
        "python_version": python.get("version"),
        "python_implementation": python.get("implementation"),
        "zodbshootout_git_commit": git.get("commit"),
        "zodb_version": packages.get("ZODB"),
        "zeo_version": packages.get("ZEO"),
        "relstorage_version": packages.get("RelStorage"),
        "object_size_bytes": options.get("object_size_bytes"),
        "concurrency_mode": metadata.get("concurrency_mode") or options.get("mode"),
        "repetitions": result.repetitions,
    }
    return _plain(found)


def _database_metadata(result: RunResult, database: str) -> dict[str, Any]:
    """The server and driver versions the run found for *database* (see dbinfo)."""
    info = (result.metadata.get("databases") or {}).get(database) or {}
    driver = info.get("driver")
    if driver and info.get("driver_version"):
        driver = f"{driver} {info['driver_version']}"
    return _plain(
        {
            "database_kind": info.get("database"),
            "database_server": info.get("server_version"),
            "database_driver": driver,
            "database_history": info.get("history"),
        }
    )


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """pyperf refuses empty and multi-line strings, and anything but str, int, float."""
    plain: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str):
            value = " ".join(value.split())
            if not value:
                continue
        elif not isinstance(value, (int, float)):
            value = str(value)
        plain[name] = value
    return plain


def _runs(key: CellKey, by_repetition: dict[int, list[PhaseTiming]]) -> list[dict[str, Any]]:
    runs = []
    for timings in complete_repetitions(key, by_repetition):
        # The table's rate is all objects over the mean duration (of one loop:
        # a looped sample's seconds cover all its loops); this is its inverse.
        seconds = statistics.fmean(t.seconds / t.loops for t in timings)
        objects = sum(t.objects for t in timings)
        runs.append({"values": [seconds / objects]})
    return runs


def dumps_pyperf(result: RunResult) -> str:
    """The pyperf suite's text, ready to be written to a ``.json`` file."""
    return json.dumps(pyperf_document(result), indent=1) + "\n"
